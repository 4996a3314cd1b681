/**
 * The wording of durations, in one place for every surface (the CLI's `run`, `show` and `waits`,
 * the dashboard's ages, countdowns and step durations), so two views a second apart say the same.
 */

/**
 * Seconds in the largest unit that fits, rounded to the nearest (`47h59m59s` is `2d`, not `1d`):
 * `4s`, `12m`, `3h`, `2d`.
 */
export function inUnits(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.round(s / 3600);
  if (h < 24) return `${h}h`;
  return `${Math.round(s / 86_400)}d`;
}

/** `4s ago`, `12m ago`, `3h ago`, `2d ago` for a time `at` before `now` (epoch ms). */
export function durationAgo(at: number, now: number): string {
  return `${inUnits((now - at) / 1000)} ago`;
}

/** `in 4s`, `in 12m`, `in 3h`, `in 2d`; `4s ago` once `at` has passed. */
export function durationUntil(at: number, now: number): string {
  if (at < now) return durationAgo(at, now);
  return `in ${inUnits((at - now) / 1000)}`;
}

/**
 * How long something took, to the precision a step's duration needs: `412 ms` under a second,
 * `4.2s` under ten seconds, else {@link inUnits} (`37s`, `12m`, `3h`).
 */
export function elapsed(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)}s`;
  return inUnits(ms / 1000);
}
