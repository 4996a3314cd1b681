import type { RunRecord, StepRecord, WaitRecord } from "../../src/api/http-api.ts";
import { useNow } from "./components.tsx";
import { clockMs, span } from "./format.ts";

/**
 * The step timeline (a Gantt chart): a row per step with a bar per attempt (failed ones red),
 * the retry backoffs between attempts hatched, and a row per wait (a question, an approval, a
 * signal, a timer, a child run) from when it opened until it was resolved — or until now, while
 * it is open. Time runs left to right from the run's creation.
 */

interface Bar {
  from: number;
  to: number;
  kind: "ok" | "failed" | "running" | "retry" | "wait" | "open";
  label: string;
  testid?: string;
}

interface Row {
  key: string;
  label: string;
  bars: Bar[];
  testid: string;
}

/** Until when a retry still waiting (a wait `r<seq>.<attempt>` open) waits: now. */
function openRetry(retries: WaitRecord[], attempt: number, end: number): number | undefined {
  return retries.some((r) => r.status === "open" && r.id.endsWith(`.${attempt}`)) ? end : undefined;
}

function stepRow(step: StepRecord, retries: WaitRecord[], end: number): Row {
  const bars: Bar[] = [];
  const attempts = step.attempts.length
    ? step.attempts
    : [{ attempt: 1, startedAt: step.startedAt, endedAt: step.endedAt, error: step.error }];
  for (const a of attempts) {
    const to = a.endedAt ?? end;
    const kind = a.error ? "failed" : a.endedAt === null ? "running" : "ok";
    bars.push({
      from: a.startedAt,
      to,
      kind,
      label: `attempt ${a.attempt}: ${a.error ? `failed (${a.error.message})` : a.endedAt === null ? "running" : "ok"}, ${span(to - a.startedAt)}`,
      testid: `gantt-attempt-${step.seq}-${a.attempt}`,
    });
  }
  // The backoff before each retry: from the end of one attempt to the start of the next.
  for (const [i, a] of step.attempts.entries()) {
    const next = step.attempts[i + 1];
    if (a.endedAt === null) continue;
    const to = next?.startedAt ?? openRetry(retries, a.attempt + 1, end);
    if (to === undefined || to <= a.endedAt) continue;
    bars.push({
      from: a.endedAt,
      to,
      kind: "retry",
      label: `retry backoff before attempt ${a.attempt + 1}: ${span(to - a.endedAt)}`,
      testid: `gantt-retry-${step.seq}-${a.attempt + 1}`,
    });
  }
  return { key: `s${step.seq}`, label: `${step.seq} ${step.name}`, bars, testid: `gantt-step-${step.seq}` };
}

function waitRow(wait: WaitRecord, end: number): Row {
  const open = wait.status === "open";
  const to = wait.resolution?.at ?? end;
  const what = wait.kind === "user" ? "question" : wait.kind;
  return {
    key: `w${wait.id}`,
    label: `${what}: ${wait.name}`,
    bars: [
      {
        from: wait.createdAt,
        to,
        kind: open ? "open" : "wait",
        label: `${what} ${open ? "open for" : "waited"} ${span(to - wait.createdAt)}${wait.resolution?.by ? ` · ${wait.resolution.by.id}` : ""}`,
      },
    ],
    testid: `gantt-wait-${wait.id}`,
  };
}

/** The rows in time order: each step, with the waits it opened right after it. */
function rowsOf(steps: StepRecord[], waits: WaitRecord[], end: number): Row[] {
  const rows: Row[] = [];
  for (const step of steps) {
    rows.push(
      stepRow(
        step,
        waits.filter((w) => w.kind === "retry" && w.seq === step.seq),
        end,
      ),
    );
    for (const w of waits) if (w.kind !== "retry" && w.seq === step.seq) rows.push(waitRow(w, end));
  }
  const placed = new Set(steps.map((s) => s.seq));
  for (const w of waits) if (w.kind !== "retry" && !placed.has(w.seq)) rows.push(waitRow(w, end));
  return rows;
}

export function Gantt(props: { run: RunRecord; steps: StepRecord[]; waits: WaitRecord[]; settled: boolean }) {
  const now = useNow(1000);
  const { run, steps, waits } = props;
  const ends = [
    ...steps.map((s) => s.endedAt ?? s.startedAt),
    ...waits.map((w) => w.resolution?.at ?? w.createdAt),
    run.updatedAt,
  ];
  const end = props.settled ? Math.max(...ends) : Math.max(now, ...ends);
  const start = Math.min(run.createdAt, ...steps.map((s) => s.startedAt), ...waits.map((w) => w.createdAt));
  const total = Math.max(1, end - start);
  const rows = rowsOf(steps, waits, end);
  const pct = (t: number) => `${(((t - start) / total) * 100).toFixed(3)}%`;
  const width = (a: number, b: number) => `max(2px, ${(((b - a) / total) * 100).toFixed(3)}%)`;
  if (rows.length === 0) return <p class="empty">No steps yet.</p>;
  return (
    <div class="gantt" data-testid="gantt">
      <div class="gantt-axis small muted">
        <span>{clockMs(start)}</span>
        <span>{span(total)}</span>
        <span>{clockMs(end)}</span>
      </div>
      {rows.map((row) => (
        <div class="gantt-row" key={row.key} data-testid={row.testid}>
          <div class="gantt-label" title={row.label}>
            {row.label}
          </div>
          <div class="gantt-track">
            {row.bars.map((bar, i) => (
              <span
                key={i}
                class={`gantt-bar bar-${bar.kind}`}
                style={{ left: pct(bar.from), width: width(bar.from, bar.to) }}
                title={bar.label}
                data-testid={bar.testid}
                data-kind={bar.kind}
              />
            ))}
          </div>
        </div>
      ))}
      <div class="gantt-legend small muted">
        <span class="gantt-bar bar-ok" /> attempt <span class="gantt-bar bar-failed" /> failed attempt{" "}
        <span class="gantt-bar bar-retry" /> retry backoff <span class="gantt-bar bar-wait" /> wait{" "}
        <span class="gantt-bar bar-open" /> open wait
      </div>
    </div>
  );
}
