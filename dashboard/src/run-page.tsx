import { useLayoutEffect, useRef } from "preact/hooks";
import { isSettled, type RunRecord, type StepRecord, type WaitRecord } from "../../src/api/http-api.ts";
import type { EffectEntry } from "./api.ts";
import { Checkpoints } from "./checkpoints.tsx";
import { ErrorText, JsonBlock, Loading, Section, useNow } from "./components.tsx";
import { until } from "./format.ts";
import { Gantt } from "./gantt.tsx";
import { PendingItems } from "./pending.tsx";
import { ResolvedWaits } from "./resolved-waits.tsx";
import { useRunData } from "./run-data.ts";
import { RunHeader } from "./run-header.tsx";
import { EffectsTable, StepsTable, type StreamText, Timeline } from "./run-tables.tsx";

/**
 * One run: its state and what can be done about it, what it waits for, the transition timeline,
 * the steps, the effect ledger and, once it is finished, a checkpoint-by-checkpoint view. Each
 * part shows as soon as its data arrives; the run's live stream keeps them current.
 */

export function RunPage(props: { id: string }) {
  const { id } = props;
  const { data, errors, notFound, streams, live, refresh } = useRunData(id);
  const { run, transitions, steps, effects, waits } = data;

  if (notFound && !run) return <RunNotFound id={id} error={errors.run} />;

  const settled = run ? isSettled(run.state) : false;

  return (
    <div class="page run-page">
      <p class="crumbs">
        <a href="#/runs">← Runs</a>
      </p>
      <RunHeader id={id} run={run} live={live} error={errors.run} onDone={refresh} />

      {run && <PendingSection run={run} waits={waits} effects={effects} onDone={refresh} />}

      <StreamingSection streams={streams} steps={steps} />

      {run && !isSettled(run.state) && <RateWaits streams={streams} steps={steps} />}

      <Section title="Timeline">
        <ErrorText error={errors.transitions ?? null} />
        {transitions ? <Timeline transitions={transitions} /> : !errors.transitions && <Loading />}
      </Section>

      {run && steps && waits && steps.length + waits.length > 0 && (
        <Section title="Step timeline">
          <Gantt run={run} steps={steps} waits={waits} settled={settled} />
        </Section>
      )}

      <StepsSection steps={steps} streams={streams} settled={settled} error={errors.steps} />

      <EffectsSection run={run} effects={effects} error={errors.effects} onDone={refresh} />

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

function RunNotFound(props: { id: string; error: string | undefined }) {
  return (
    <div class="page">
      <p>
        <a href="#/runs">← Runs</a>
      </p>
      <h1>Run not found</h1>
      <p class="muted">
        No run <code>{props.id}</code>: {props.error}
      </p>
    </div>
  );
}

/** What the run waits for, and the effects to reconcile when it needs reconciliation; nothing when neither. */
function PendingSection(props: {
  run: RunRecord;
  waits: WaitRecord[] | null;
  effects: EffectEntry[] | null;
  onDone: () => void;
}) {
  const { run, waits } = props;
  const openWaits = waits?.filter((w) => w.status === "open") ?? [];
  const unknownEffects = props.effects?.filter((e) => e.effect.status === "unknown") ?? [];
  const reconcile = run.state === "NEEDS_RECONCILIATION" && unknownEffects.length > 0;
  if (openWaits.length === 0 && !reconcile) return null;
  return (
    <Section title="Pending">
      <PendingItems run={run} waits={waits ?? []} onDone={props.onDone} />
      {reconcile && <ReconcileNeeded unknownEffects={unknownEffects} />}
    </Section>
  );
}

function ReconcileNeeded(props: { unknownEffects: EffectEntry[] }) {
  return (
    <div class="item reconcile-needed" data-testid="pending-reconcile">
      <div class="item-head">
        <span class="kind">reconcile</span>
      </div>
      <p>
        Nobody can tell whether{" "}
        {props.unknownEffects.map((e, i) => (
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
  );
}

/**
 * The calls waiting for a slot of a rate limit before their attempt begins, as `cairn run` prints
 * them; nothing when none waits. A wait is over when its slot's time has come or its attempt has
 * begun (the step's snapshot shows it).
 */
function RateWaits(props: { streams: ReadonlyMap<number, StreamText>; steps: StepRecord[] | null }) {
  const now = useNow(1_000);
  const waiting = [...props.streams.entries()].flatMap(([seq, { attempt, slot }]) => {
    if (!slot || slot.until <= now) return [];
    const step = props.steps?.find((x) => x.seq === seq);
    return !step || step.attempts.length < attempt ? [{ seq, attempt, slot }] : [];
  });
  if (waiting.length === 0) return null;
  return (
    <Section title="Waiting for a rate limit">
      {waiting.map(({ seq, attempt, slot }) => (
        <p key={seq} class="notice" data-testid={`rate-wait-${seq}`}>
          step {seq} {slot.kind} "{slot.name}": attempt {attempt} waits for a slot of rate limit "{slot.rateLimit}" (
          {slot.rule}), {until(slot.until, now)}
        </p>
      ))}
    </Section>
  );
}

/** The text model calls are streaming, for steps still running; nothing when there is none. */
function StreamingSection(props: { streams: ReadonlyMap<number, StreamText>; steps: StepRecord[] | null }) {
  const inFlight = [...props.streams.entries()].filter(([seq, s]) => {
    const step = props.steps?.find((x) => x.seq === seq);
    return s.text && (!step || step.status === "started");
  });
  if (inFlight.length === 0) return null;
  return (
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
  );
}

function StepsSection(props: {
  steps: StepRecord[] | null;
  streams: ReadonlyMap<number, StreamText>;
  settled: boolean;
  error: string | undefined;
}) {
  const { steps } = props;
  return (
    <Section title="Steps" aside={steps && <span class="muted small">{steps.length}</span>}>
      <ErrorText error={props.error ?? null} />
      {steps ? (
        steps.length ? (
          <StepsTable steps={steps} streams={props.streams} settled={props.settled} />
        ) : (
          <p class="empty">No steps yet.</p>
        )
      ) : (
        !props.error && <Loading />
      )}
    </Section>
  );
}

function EffectsSection(props: {
  run: RunRecord | null;
  effects: EffectEntry[] | null;
  error: string | undefined;
  onDone: () => void;
}) {
  const { run, effects } = props;
  return (
    <Section title="Effect ledger" id="effects">
      <ErrorText error={props.error ?? null} />
      {effects && run ? (
        effects.length ? (
          <EffectsTable run={run} effects={effects} onDone={props.onDone} />
        ) : (
          <p class="empty">No effects.</p>
        )
      ) : (
        !props.error && <Loading />
      )}
    </Section>
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
