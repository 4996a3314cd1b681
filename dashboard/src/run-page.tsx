import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import type { RunRecord, StepRecord, TransitionRecord, WaitRecord } from "../../src/core/records.ts";
import { isSettled, TERMINAL_STATES } from "../../src/core/run-state.ts";
import { ApiError, api, type EffectEntry, type LiveStatus, subscribe } from "./api.ts";
import { Checkpoints } from "./checkpoints.tsx";
import {
  Age,
  ErrorText,
  ErrorView,
  JsonBlock,
  LiveDot,
  Loading,
  Section,
  StateBadge,
  Time,
  useAction,
} from "./components.tsx";
import { actorLabel, count, money } from "./format.ts";
import { PendingItems, ResolvedWaits } from "./pending.tsx";
import { runHref } from "./router.ts";
import { EffectsTable, StepsTable, type StreamText, Timeline } from "./run-tables.tsx";
import { refusal, useCan } from "./session.ts";

/**
 * One run: its state and what can be done about it, what it waits for, the transition timeline,
 * the steps, the effect ledger and, once it is finished, a checkpoint-by-checkpoint view. Each
 * part shows as soon as its data arrives; the run's live stream keeps them current.
 */

/**
 * Settled states in which a run stays until someone acts (the page refetches after its own acts).
 * The other settled ones (INTERRUPTED, which a worker may recover, and NEEDS_RECONCILIATION) are
 * looked at every few seconds once their stream has ended.
 */
const FINAL: ReadonlySet<string> = new Set(["COMPLETED", "FAILED", "BLOCKED", "CANCELLED", "COMPENSATED"]);

type Part = "run" | "transitions" | "steps" | "effects" | "waits";
const PARTS: Part[] = ["run", "transitions", "steps", "effects", "waits"];

interface Data {
  run: RunRecord | null;
  transitions: TransitionRecord[] | null;
  steps: StepRecord[] | null;
  effects: EffectEntry[] | null;
  waits: WaitRecord[] | null;
}

const EMPTY: Data = { run: null, transitions: null, steps: null, effects: null, waits: null };

const fetchers: { [K in Part]: (id: string) => Promise<Data[K]> } = {
  run: (id) => api.run(id).then((r) => r.run),
  transitions: (id) => api.transitions(id).then((r) => r.transitions),
  steps: (id) => api.steps(id).then((r) => r.steps),
  effects: (id) => api.effects(id).then((r) => r.effects),
  waits: (id) => api.waits(id).then((r) => r.waits),
};

function useRunData(id: string) {
  const [data, setData] = useState<Data>(EMPTY);
  const [errors, setErrors] = useState<Partial<Record<Part, string>>>({});
  const [notFound, setNotFound] = useState(false);
  const [streams, setStreams] = useState<ReadonlyMap<number, StreamText>>(new Map());
  const [live, setLive] = useState<LiveStatus>("connecting");
  // Per part: the number of the latest request, and of the latest applied (stale answers are dropped).
  const asked = useRef<Record<Part, number>>({ run: 0, transitions: 0, steps: 0, effects: 0, waits: 0 });
  const applied = useRef<Record<Part, number>>({ run: 0, transitions: 0, steps: 0, effects: 0, waits: 0 });

  const fetchParts = useCallback(
    (parts: Iterable<Part>) => {
      for (const part of parts) {
        const mine = ++asked.current[part];
        fetchers[part](id).then(
          (value) => {
            if (mine < applied.current[part]) return;
            applied.current[part] = mine;
            setData((old) => ({ ...old, [part]: value }));
            setErrors((old) => (old[part] ? { ...old, [part]: undefined } : old));
          },
          (error: Error) => {
            if (part === "run" && error instanceof ApiError && error.status === 404) setNotFound(true);
            setErrors((old) => ({ ...old, [part]: error.message }));
          },
        );
      }
    },
    [id],
  );

  const refresh = useCallback(() => fetchParts(PARTS), [fetchParts]);

  useEffect(() => {
    setData(EMPTY);
    setErrors({});
    setNotFound(false);
    setStreams(new Map());
    fetchParts(PARTS);
  }, [fetchParts]);

  // The live stream. The server ends it (`end`) when the run settles; it is opened again when the
  // run is seen open again (after a resume or a reconcile, or a worker's recovery of an
  // INTERRUPTED run, looked for every few seconds while such a run is settled).
  const dataRef = useRef(data);
  dataRef.current = data;
  const state = data.run?.state ?? null;
  const open = state === null || !isSettled(state);
  const [ended, setEnded] = useState(false);
  useEffect(() => {
    if (open && ended) {
      setEnded(false);
      fetchParts(PARTS);
    }
  }, [open, ended, fetchParts]);
  const final = state !== null && FINAL.has(state);
  useEffect(() => {
    if (!ended || final) return;
    const timer = setInterval(() => fetchParts(["run"]), 5000);
    return () => clearInterval(timer);
  }, [ended, final, fetchParts]);

  useEffect(() => {
    if (ended) {
      setLive("final");
      return;
    }
    // Refetches: at once, then at most one more per 250 ms window for what was asked meanwhile.
    const due = new Set<Part>();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const openWindow = () => {
      timer = setTimeout(() => {
        timer = undefined;
        if (due.size === 0) return;
        const parts = [...due];
        due.clear();
        fetchParts(parts);
        openWindow();
      }, 250);
    };
    const soon = (parts: Part[]) => {
      if (timer) {
        for (const p of parts) due.add(p);
        return;
      }
      fetchParts(parts);
      openWindow();
    };
    const stream = (seq: number, update: (old: StreamText | undefined) => StreamText | undefined) =>
      setStreams((old) => {
        const next = new Map(old);
        const value = update(old.get(seq));
        if (value) next.set(seq, value);
        else next.delete(seq);
        return next;
      });
    const stop = subscribe(`/api/runs/${encodeURIComponent(id)}/events`, {
      onStatus: setLive,
      onReopen: () => fetchParts(PARTS),
      onEvent: (type, event) => {
        if (typeof event.runId === "string" && event.runId !== id) return;
        const seq = typeof event.seq === "number" ? event.seq : null;
        const attempt = typeof event.attempt === "number" ? event.attempt : 0;
        switch (type) {
          case "transition": {
            const tid = typeof event.id === "number" ? event.id : null;
            const known = dataRef.current.run?.lastTransitionId ?? -1;
            // A reconnect replays transitions this page has already loaded.
            if (tid !== null && tid <= known) break;
            const to = typeof event.to === "string" ? event.to : typeof event.state === "string" ? event.state : null;
            setData((old) => {
              const run =
                old.run && to
                  ? {
                      ...old.run,
                      state: to as RunRecord["state"],
                      pausedReason: (event.pausedReason as RunRecord["pausedReason"]) ?? null,
                      ...(tid !== null ? { lastTransitionId: tid } : {}),
                      ...(typeof event.at === "number" ? { updatedAt: event.at } : {}),
                    }
                  : old.run;
              const transitions =
                old.transitions && tid !== null && to && !old.transitions.some((t) => t.id === tid)
                  ? [...old.transitions, event as unknown as TransitionRecord]
                  : old.transitions;
              return { ...old, run, transitions };
            });
            soon(PARTS);
            break;
          }
          case "step": {
            if (seq !== null && Array.isArray(event.attempts) && typeof event.status === "string") {
              // A snapshot of the step: it replaces what the page has for that seq.
              const step = event as unknown as StepRecord;
              if (!dataRef.current.steps) soon(["steps"]);
              setData((old) => {
                if (!old.steps) return old;
                const others = old.steps.filter((x) => x.seq !== step.seq);
                return { ...old, steps: [...others, step].sort((a, b) => a.seq - b.seq) };
              });
              if (step.effect || step.kind === "wait" || step.kind === "child") soon(["effects", "waits"]);
            } else {
              soon(["steps", "effects", "waits"]);
            }
            break;
          }
          case "model.start":
            if (seq !== null) stream(seq, () => ({ attempt, text: "", done: false }));
            break;
          case "model.text":
            if (seq !== null && typeof event.text === "string") {
              const text = event.text;
              stream(seq, (old) =>
                old && old.attempt === attempt
                  ? { ...old, text: old.text + text }
                  : { attempt, text: (old?.text ?? "") + text, done: false },
              );
            }
            break;
          case "model.retry":
            if (seq !== null) stream(seq, () => ({ attempt, text: "", done: false }));
            break;
          case "model.end":
            if (seq !== null) stream(seq, (old) => (old ? { ...old, done: true } : old));
            soon(["steps"]);
            break;
          case "end":
            // At once, not through `soon`: ending the stream clears its pending refetches.
            fetchParts(PARTS);
            setEnded(true);
            break;
        }
      },
    });
    return () => {
      stop();
      clearTimeout(timer);
    };
  }, [id, fetchParts, ended]);

  return { data, errors, notFound, streams, live, refresh };
}

export function RunPage(props: { id: string }) {
  const { id } = props;
  const { data, errors, notFound, streams, live, refresh } = useRunData(id);
  const { run, transitions, steps, effects, waits } = data;

  if (notFound && !run) {
    return (
      <div class="page">
        <p>
          <a href="#/runs">← Runs</a>
        </p>
        <h1>Run not found</h1>
        <p class="muted">
          No run <code>{id}</code>: {errors.run}
        </p>
      </div>
    );
  }

  const inFlight = [...streams.entries()].filter(([seq, s]) => {
    const step = steps?.find((x) => x.seq === seq);
    return s.text && (!step || step.status === "started");
  });
  const settled = run ? isSettled(run.state) : false;
  const openWaits = waits?.filter((w) => w.status === "open") ?? [];
  const unknownEffects = effects?.filter((e) => e.effect.status === "unknown") ?? [];

  return (
    <div class="page run-page">
      <p class="crumbs">
        <a href="#/runs">← Runs</a>
      </p>
      <RunHeader id={id} run={run} live={live} error={errors.run} onDone={refresh} />

      {(openWaits.length > 0 || (run?.state === "NEEDS_RECONCILIATION" && unknownEffects.length > 0)) && run && (
        <Section title="Pending">
          <PendingItems run={run} waits={waits ?? []} onDone={refresh} />
          {run.state === "NEEDS_RECONCILIATION" && unknownEffects.length > 0 && (
            <div class="item reconcile-needed" data-testid="pending-reconcile">
              <div class="item-head">
                <span class="kind">reconcile</span>
              </div>
              <p>
                Nobody can tell whether{" "}
                {unknownEffects.map((e, i) => (
                  <span key={e.effect.id}>
                    {i > 0 && ", "}
                    <code>{e.name}</code> ({e.effect.id})
                  </span>
                ))}{" "}
                happened. Check the outside world, then mark each effect in the{" "}
                <button
                  type="button"
                  class="link"
                  onClick={() => document.getElementById("effects")?.scrollIntoView({ behavior: "smooth" })}
                >
                  effect ledger
                </button>{" "}
                as applied or not applied.
              </p>
            </div>
          )}
        </Section>
      )}

      {inFlight.length > 0 && (
        <Section title="Model output (streaming)">
          {inFlight.map(([seq, s]) => (
            <div key={seq} class="stream-box" data-testid={`stream-${seq}`}>
              <div class="small muted">
                step {seq}, attempt {s.attempt}
                {s.done ? "" : " …"}
              </div>
              <StreamBox text={s.text} />
            </div>
          ))}
        </Section>
      )}

      <Section title="Timeline">
        <ErrorText error={errors.transitions ?? null} />
        {transitions ? <Timeline transitions={transitions} /> : !errors.transitions && <Loading />}
      </Section>

      <Section title="Steps" aside={steps && <span class="muted small">{steps.length}</span>}>
        <ErrorText error={errors.steps ?? null} />
        {steps ? (
          steps.length ? (
            <StepsTable steps={steps} streams={streams} settled={settled} />
          ) : (
            <p class="empty">No steps yet.</p>
          )
        ) : (
          !errors.steps && <Loading />
        )}
      </Section>

      <Section title="Effect ledger" id="effects">
        <ErrorText error={errors.effects ?? null} />
        {effects && run ? (
          effects.length ? (
            <EffectsTable run={run} effects={effects} onDone={refresh} />
          ) : (
            <p class="empty">No effects.</p>
          )
        ) : (
          !errors.effects && <Loading />
        )}
      </Section>

      {waits?.some((w) => w.status !== "open") && (
        <Section title="Waits">
          <ResolvedWaits waits={waits} />
        </Section>
      )}
      <ErrorText error={errors.waits ?? null} />

      {settled && steps && transitions && (
        <Section title="Checkpoints">
          <Checkpoints steps={steps} transitions={transitions} />
        </Section>
      )}

      {run && <RunData run={run} />}
    </div>
  );
}

/** Streamed text, kept scrolled to its end while the reader is at the end. */
function StreamBox(props: { text: string }) {
  const ref = useRef<HTMLPreElement>(null);
  const pinned = useRef(true);
  useLayoutEffect(() => {
    const el = ref.current;
    if (el && pinned.current) el.scrollTop = el.scrollHeight;
  }, [props.text]);
  return (
    <pre
      class="stream"
      ref={ref}
      onScroll={(e) => {
        const el = e.currentTarget;
        pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
      }}
    >
      {props.text}
    </pre>
  );
}

function RunHeader(props: {
  id: string;
  run: RunRecord | null;
  live: LiveStatus;
  error: string | undefined;
  onDone: () => void;
}) {
  const { run } = props;
  return (
    <header class="run-header card">
      <div class="run-title">
        <h1 class="mono" title={props.id}>
          {props.id}
        </h1>
        {run && <StateBadge state={run.state} testid="run-state" />}
        {run?.pausedReason && (
          <span class="paused-reason" data-testid="run-paused-reason">
            {run.pausedReason}
          </span>
        )}
        {run?.acceptance && (
          <span
            class={`pill tone-${run.acceptance.decision === "accepted" ? "green" : "red"}`}
            data-testid="run-acceptance"
            title={`${actorLabel(run.acceptance.by)}${run.acceptance.note ? `: ${run.acceptance.note}` : ""}`}
          >
            {run.acceptance.decision}
          </span>
        )}
        <LiveDot status={props.live} />
      </div>
      <ErrorText error={props.error ?? null} />
      {!run ? (
        !props.error && <Loading what="run" />
      ) : (
        <>
          <dl class="facts inline-facts">
            <dt>Agent</dt>
            <dd>
              {run.agent} / <strong>{run.workflow}</strong>
              <span class="muted small"> v{run.versions.workflow}</span>
            </dd>
            {run.key && (
              <>
                <dt>Key</dt>
                <dd class="mono">{run.key}</dd>
              </>
            )}
            <dt>Created</dt>
            <dd>
              <Time at={run.createdAt} />{" "}
              <span class="muted small">
                (<Age at={run.createdAt} />)
              </span>
            </dd>
            <dt>Updated</dt>
            <dd>
              <Time at={run.updatedAt} />
            </dd>
            <dt>Cost</dt>
            <dd data-testid="run-cost">
              {money(run.usage?.costUsd)}
              {run.usage && (
                <span class="muted small">
                  {" "}
                  · {count(run.usage.inputTokens)} in / {count(run.usage.outputTokens)} out ·{" "}
                  {count(run.usage.modelCalls)} model calls · {count(run.usage.toolCalls)} tool calls ·{" "}
                  {count(run.usage.steps)} steps
                </span>
              )}
            </dd>
            {run.leaseOwner && (
              <>
                <dt>Worker</dt>
                <dd class="mono small">{run.leaseOwner}</dd>
              </>
            )}
            {(run.parentRunId || run.continuedFrom || run.continuedTo) && (
              <>
                <dt>Related</dt>
                <dd>
                  {run.parentRunId && (
                    <span>
                      parent <a href={runHref(run.parentRunId)}>{run.parentRunId}</a>{" "}
                    </span>
                  )}
                  {run.continuedFrom && (
                    <span>
                      continues <a href={runHref(run.continuedFrom)}>{run.continuedFrom}</a>{" "}
                    </span>
                  )}
                  {run.continuedTo && (
                    <span>
                      continued as <a href={runHref(run.continuedTo)}>{run.continuedTo}</a>
                    </span>
                  )}
                </dd>
              </>
            )}
          </dl>
          {run.stopRequest && (
            <p class="notice">
              {run.stopRequest.kind} requested by {actorLabel(run.stopRequest.by)}: {run.stopRequest.reason}
            </p>
          )}
          {run.error && (
            <div class="run-error" data-testid="run-error">
              <ErrorView error={run.error} />
            </div>
          )}
          <RunActions run={run} onDone={props.onDone} />
        </>
      )}
    </header>
  );
}

const RESUMABLE_ERRORS = new Set(["REPLAY_DIVERGENCE", "VERSION_MISMATCH"]);

function RunActions(props: { run: RunRecord; onDone: () => void }) {
  const { run } = props;
  const action = useAction();
  const [confirming, setConfirming] = useState(false);
  const [reason, setReason] = useState("");
  const [note, setNote] = useState("");
  const canCancel = (!TERMINAL_STATES.has(run.state) || run.state === "INTERRUPTED") && run.state !== "CANCELLING";
  const canResume =
    run.state === "INTERRUPTED" ||
    (run.state === "PAUSED" && run.pausedReason === "suspended_orphan") ||
    (run.state === "FAILED" && RESUMABLE_ERRORS.has(run.error?.code ?? ""));
  const canJudge = run.state === "COMPLETED" && !run.acceptance;
  const allowed = useCan("operate");
  const denied = allowed ? undefined : refusal("operate");
  const act = async (fn: () => Promise<unknown>) => {
    if (await action.run(fn)) {
      setConfirming(false);
      props.onDone();
    }
  };

  const exportContract = () =>
    action.run(async () => {
      const contract = await api.contract(run.id);
      const blob = new Blob([JSON.stringify(contract, null, 2)], { type: "application/json" });
      const url = URL.createObjectURL(blob);
      const a = document.createElement("a");
      a.href = url;
      a.download = `${run.id}.contract.json`;
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 1000);
    });

  return (
    <div class="run-actions" data-testid="run-actions">
      {canResume && (
        <button
          type="button"
          class="primary"
          disabled={action.busy || !allowed}
          title={denied}
          onClick={() => act(() => api.resume(run.id))}
          data-testid="resume-button"
        >
          Resume
        </button>
      )}
      {canJudge && (
        <span class="judge">
          <input
            class="note"
            placeholder="note (optional)"
            value={note}
            onInput={(e) => setNote(e.currentTarget.value)}
            data-testid="acceptance-note"
          />
          <button
            type="button"
            class="approve"
            disabled={action.busy || !allowed}
            title={denied}
            onClick={() => act(() => api.accept(run.id, note.trim() || undefined))}
            data-testid="accept-button"
          >
            Accept
          </button>
          <button
            type="button"
            class="deny"
            disabled={action.busy || !allowed}
            title={denied}
            onClick={() => act(() => api.reject(run.id, note.trim() || undefined))}
            data-testid="reject-button"
          >
            Reject
          </button>
        </span>
      )}
      {canCancel &&
        (confirming ? (
          <span class="confirm">
            <input
              class="note"
              placeholder="reason (optional)"
              value={reason}
              onInput={(e) => setReason(e.currentTarget.value)}
              data-testid="cancel-reason"
            />
            <button
              type="button"
              class="deny"
              disabled={action.busy}
              onClick={() => act(() => api.cancel(run.id, reason.trim() || undefined))}
              data-testid="cancel-confirm"
            >
              Cancel run
            </button>
            <button type="button" class="link" onClick={() => setConfirming(false)}>
              keep it
            </button>
          </span>
        ) : (
          <button
            type="button"
            disabled={!allowed}
            title={denied}
            onClick={() => setConfirming(true)}
            data-testid="cancel-button"
          >
            Cancel…
          </button>
        ))}
      <button type="button" class="link" disabled={action.busy} onClick={exportContract} data-testid="export-contract">
        Export contract
      </button>
      <ErrorText error={action.error} testid="action-error" />
    </div>
  );
}

function RunData(props: { run: RunRecord }) {
  const { run } = props;
  return (
    <Section title="Input and output">
      <div class="grid2">
        <div>
          <h4>Input</h4>
          <JsonBlock value={run.input} testid="run-input" />
        </div>
        <div>
          <h4>Output</h4>
          <JsonBlock value={run.output} testid="run-output" empty={isSettled(run.state) ? "none" : "not yet"} />
        </div>
      </div>
      {Object.keys(run.meta ?? {}).length > 0 && (
        <details>
          <summary>Meta</summary>
          <JsonBlock value={run.meta} />
        </details>
      )}
    </Section>
  );
}
