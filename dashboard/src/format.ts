import { type Actor, durationAgo, durationUntil, elapsed, inUnits, type Json } from "../../src/api/http-api.ts";

/** Text helpers: times, durations, money, JSON. */

const pad2 = (n: number) => String(n).padStart(2, "0");

/** `2026-07-01 14:03:07`, local time. */
export function dateTime(at: number): string {
  const d = new Date(at);
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${clock(at)}`;
}

/** `14:03:07`, local time. */
export function clock(at: number): string {
  const d = new Date(at);
  return `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
}

/** `14:03:07.412`, local time. */
export function clockMs(at: number): string {
  return `${clock(at)}.${String(new Date(at).getMilliseconds()).padStart(3, "0")}`;
}

/**
 * How long something took: `412 ms`, `4.2s`, then the CLI's units (`37s`, `12m`, `3h`, `2d`). The
 * words of every duration come from core/durations.ts, which the CLI uses too.
 */
export function span(ms: number): string {
  return elapsed(ms);
}

/** `4s ago`, `12m ago`: as the CLI says it. */
export function ago(at: number, now: number): string {
  return durationAgo(Math.min(at, now), now);
}

/** `in 4s`, `in 2h`; `4s ago` once passed: as the CLI says it. */
export function until(at: number, now: number): string {
  return durationUntil(at, now);
}

/**
 * `2026-07-01 02:00:00` in the IANA `timeZone` (a cron schedule's), or undefined when this
 * browser does not know the zone.
 */
export function dateTimeIn(at: number, timeZone: string): string | undefined {
  try {
    const parts = new Intl.DateTimeFormat("en-CA", {
      timeZone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23",
    }).formatToParts(at);
    const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? "";
    return `${part("year")}-${part("month")}-${part("day")} ${part("hour")}:${part("minute")}:${part("second")}`;
  } catch {
    return undefined;
  }
}

/** An interval in the largest whole unit (`90s`, `5m`, `1h`, `1d`; `1500 ms`): exact, unlike {@link units}. */
export function interval(ms: number): string {
  for (const [unit, size] of [
    ["d", 86_400_000],
    ["h", 3_600_000],
    ["m", 60_000],
    ["s", 1000],
  ] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms} ms`;
}

/** `4s`, `12m`, `3h`, `2d` (a countdown's "left"). */
export function units(ms: number): string {
  return inUnits(ms / 1000);
}

/** `$0.0123`, `$1.20`, `—` for no figure. */
export function money(usd: number | undefined | null): string {
  if (usd === undefined || usd === null || !Number.isFinite(usd)) return "—";
  if (usd === 0) return "$0";
  if (usd < 0.0001) return "<$0.0001";
  if (usd < 1) return `$${usd.toFixed(4)}`;
  return `$${usd.toFixed(2)}`;
}

/** `12,345`. */
export function count(n: number): string {
  return n.toLocaleString("en-US");
}

export function actorLabel(actor: Actor | undefined | null): string {
  return actor ? `${actor.kind}:${actor.id}` : "—";
}

/** Pretty JSON (2 spaces); `undefined` shows as nothing. */
export function pretty(value: Json | undefined | unknown): string {
  if (value === undefined) return "";
  try {
    return JSON.stringify(value, null, 2) ?? "";
  } catch {
    return String(value);
  }
}

/** One-line JSON, cut at `max` characters. */
export function oneLine(value: Json | undefined | unknown, max = 80): string {
  if (value === undefined) return "";
  let text: string;
  try {
    text = JSON.stringify(value) ?? "";
  } catch {
    text = String(value);
  }
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A run id for a table: whole up to 28 characters, else its start and end. */
export function shortId(id: string): string {
  return id.length > 28 ? `${id.slice(0, 14)}…${id.slice(-12)}` : id;
}

/** The details of a wait as the object they are (`{}` for anything else). */
export function fields<T>(details: Json | undefined): Partial<T> {
  return (details && typeof details === "object" && !Array.isArray(details) ? details : {}) as Partial<T>;
}
