import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { Json, RunState, SerializedError, StepRecord } from "../../src/api/http-api.ts";
import type { LiveStatus } from "./api.ts";
import { ago, dateTime, pretty } from "./format.ts";

/** Small shared pieces: badges, JSON blocks, errors, a ticking clock, an action runner. */

/** The colour family of a state's badge. */
export function stateTone(state: string): string {
  switch (state) {
    case "COMPLETED":
      return "green";
    case "RUNNING":
    case "RESUMING":
    case "PENDING":
      return "blue";
    case "PAUSED":
      return "amber";
    case "FAILED":
    case "BLOCKED":
      return "red";
    case "NEEDS_RECONCILIATION":
    case "COMPENSATING":
    case "RECONCILING":
    case "COMPENSATED":
      return "purple";
    default:
      return "grey";
  }
}

export function StateBadge(props: { state: RunState | string; testid?: string }) {
  return (
    <span class={`badge tone-${stateTone(props.state)}`} data-testid={props.testid}>
      {props.state}
    </span>
  );
}

const STATUS_TONES: Record<string, string> = {
  completed: "green",
  applied: "green",
  approved: "green",
  answered: "green",
  signalled: "green",
  fired: "green",
  resolved: "green",
  started: "blue",
  open: "amber",
  intended: "blue",
  failed: "red",
  denied: "red",
  expired: "red",
  timed_out: "red",
  unknown: "purple",
  not_applied: "grey",
  closed: "grey",
};

/** A lower-case status (step, effect, wait) as a small pill. */
export function StatusPill(props: { status: string }) {
  return <span class={`pill tone-${STATUS_TONES[props.status] ?? "grey"}`}>{props.status}</span>;
}

/** A JSON value, pretty-printed in a scrollable block. */
export function JsonBlock(props: { value: Json | undefined | unknown; testid?: string; empty?: string }) {
  if (props.value === undefined) return <span class="muted">{props.empty ?? "—"}</span>;
  return (
    <pre class="json" data-testid={props.testid}>
      {pretty(props.value)}
    </pre>
  );
}

/** A serialized error: `[CODE] name: message`, with its causes. */
export function ErrorView(props: { error: SerializedError | undefined }) {
  const { error } = props;
  if (!error) return null;
  return (
    <div class="error-view">
      <div>
        {error.code && <code class="code">{error.code}</code>} <strong>{error.name}</strong>: {error.message}
      </div>
      {error.cause && (
        <div class="cause">
          caused by <ErrorView error={error.cause} />
        </div>
      )}
    </div>
  );
}

/** An absolute time with the relative one as a tooltip. */
export function Time(props: { at: number | null | undefined }) {
  if (props.at === null || props.at === undefined) return <span class="muted">—</span>;
  return (
    <time dateTime={new Date(props.at).toISOString()} title={ago(props.at, Date.now())}>
      {dateTime(props.at)}
    </time>
  );
}

/** Relative time (`3m ago`) with the absolute one as a tooltip; re-renders as time passes. */
export function Age(props: { at: number }) {
  const now = useNow(5_000);
  return (
    <time dateTime={new Date(props.at).toISOString()} title={dateTime(props.at)}>
      {ago(props.at, now)}
    </time>
  );
}

/** One timer per period, shared by every component that shows the time passing. */
const tickers = new Map<number, { listeners: Set<(now: number) => void>; timer: ReturnType<typeof setInterval> }>();

/** `Date.now()`, refreshed every `everyMs`. */
export function useNow(everyMs: number): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    let ticker = tickers.get(everyMs);
    if (!ticker) {
      const listeners = new Set<(now: number) => void>();
      const timer = setInterval(() => {
        const t = Date.now();
        for (const listener of listeners) listener(t);
      }, everyMs);
      ticker = { listeners, timer };
      tickers.set(everyMs, ticker);
    }
    const mine = ticker;
    mine.listeners.add(setNow);
    return () => {
      mine.listeners.delete(setNow);
      if (mine.listeners.size === 0) {
        clearInterval(mine.timer);
        tickers.delete(everyMs);
      }
    };
  }, [everyMs]);
  return now;
}

/** A message under an action that failed. */
export function ErrorText(props: { error: string | null; testid?: string }) {
  if (!props.error) return null;
  return (
    <div class="error-text" role="alert" data-testid={props.testid}>
      {props.error}
    </div>
  );
}

/**
 * Runs an action (a POST): `busy` while it runs, `error` holds the message it failed with until
 * the next try. `run` resolves to true when the action succeeded.
 */
export function useAction(): {
  busy: boolean;
  error: string | null;
  run: (action: () => Promise<unknown>) => Promise<boolean>;
  setError: (error: string | null) => void;
} {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const mounted = useRef(true);
  useEffect(
    () => () => {
      mounted.current = false;
    },
    [],
  );
  const run = useCallback(async (action: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await action();
      return true;
    } catch (e) {
      if (mounted.current) setError((e as Error).message);
      return false;
    } finally {
      if (mounted.current) setBusy(false);
    }
  }, []);
  return { busy, error, run, setError };
}

/** A titled section of a page. */
export function Section(props: { title: string; aside?: ComponentChildren; children: ComponentChildren; id?: string }) {
  return (
    <section class="section" id={props.id}>
      <header class="section-head">
        <h2>{props.title}</h2>
        {props.aside && <div class="aside">{props.aside}</div>}
      </header>
      {props.children}
    </section>
  );
}

export function Loading(props: { what?: string }) {
  return <p class="loading">loading{props.what ? ` ${props.what}` : ""}…</p>;
}

/** Whether the live stream is connected. */
export function LiveDot(props: { status: LiveStatus }) {
  if (props.status === "final") return null;
  const label = props.status === "live" ? "live" : props.status === "connecting" ? "connecting…" : "reconnecting…";
  return (
    <span class={`live live-${props.status}`} data-testid="live-status" title="live updates">
      <span class="dot" />
      {label}
    </span>
  );
}

/** A step's arguments beside its result, its error, or (while it runs) the text it streams. */
export function StepArgsResult(props: { step: StepRecord; streaming?: string | undefined }) {
  const { step, streaming } = props;
  return (
    <div class="grid2">
      <div>
        <h4>Arguments</h4>
        <JsonBlock value={step.args} />
      </div>
      <div>
        <h4>{step.status === "failed" ? "Error" : "Result"}</h4>
        {step.status === "failed" ? (
          <ErrorView error={step.error} />
        ) : step.status === "started" && streaming !== undefined ? (
          <pre class="stream">{streaming}</pre>
        ) : (
          <JsonBlock value={step.result} empty={step.status === "started" ? "not yet" : "—"} />
        )}
      </div>
    </div>
  );
}

/** The optional note (or reason) typed beside an action's buttons. */
export function NoteInput(props: {
  value: string;
  onChange: (value: string) => void;
  testid: string;
  placeholder?: string;
}) {
  return (
    <input
      class="note"
      placeholder={props.placeholder ?? "note (optional)"}
      value={props.value}
      onInput={(e) => props.onChange(e.currentTarget.value)}
      data-testid={props.testid}
    />
  );
}
