import type { Actor, Json } from "../../src/api/http-api.ts";

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

/** `4s`, `12m`, `3h 5m`, `2d 3h`. */
export function span(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  const [d, h, m] = [Math.floor(s / 86_400), Math.floor((s % 86_400) / 3600), Math.floor((s % 3600) / 60)];
  if (d > 0) return h > 0 ? `${d}d ${h}h` : `${d}d`;
  if (h > 0) return m > 0 ? `${h}h ${m}m` : `${h}h`;
  if (m > 0) return s % 60 > 0 ? `${m}m ${s % 60}s` : `${m}m`;
  return `${s}s`;
}

/** `4s ago`, `12m ago`, `just now`. */
export function ago(at: number, now: number): string {
  const ms = now - at;
  if (ms < 1500) return "just now";
  return `${coarse(ms)} ago`;
}

/** `in 4s`, `in 2h 5m`; `4s ago` once passed. */
export function until(at: number, now: number): string {
  const ms = at - now;
  if (ms < 0) return ago(at, now);
  return `in ${span(ms)}`;
}

function coarse(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
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
