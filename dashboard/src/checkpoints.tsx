import { useState } from "preact/hooks";
import type { StepRecord, TransitionRecord } from "../../src/api/http-api.ts";
import { StateBadge, StatusPill, StepArgsResult } from "./components.tsx";
import { actorLabel, clockMs, span } from "./format.ts";

/**
 * A finished run, checkpoint by checkpoint: pick step N (slider, list, prev/next) to see its
 * arguments and result, and the run's transitions up to the time it ended.
 */
export function Checkpoints(props: { steps: StepRecord[]; transitions: TransitionRecord[] }) {
  const steps = [...props.steps].sort((a, b) => a.seq - b.seq);
  const [index, setIndex] = useState(0);
  if (steps.length === 0) return <p class="empty">This run took no steps.</p>;
  const at = Math.min(index, steps.length - 1);
  const step = steps[at]!;
  const go = (i: number) => setIndex(Math.max(0, Math.min(steps.length - 1, i)));
  return (
    <div class="checkpoints" data-testid="checkpoints">
      <CheckpointSlider at={at} count={steps.length} go={go} />
      <div class="checkpoint-body">
        <ol class="checkpoint-list">
          {steps.map((s, i) => (
            <li key={s.seq}>
              <button
                type="button"
                class={i === at ? "on" : ""}
                onClick={() => go(i)}
                data-testid={`checkpoint-${s.seq}`}
              >
                <span class="mono muted">{s.seq}</span> <code>{s.name}</code>
                {s.status !== "completed" && <StatusPill status={s.status} />}
              </button>
            </li>
          ))}
        </ol>
        <CheckpointDetail step={step} transitions={props.transitions} />
      </div>
    </div>
  );
}

/** Prev, a slider and next over the checkpoints. */
function CheckpointSlider(props: { at: number; count: number; go: (index: number) => void }) {
  return (
    <div class="slider">
      <button
        type="button"
        onClick={() => props.go(props.at - 1)}
        disabled={props.at === 0}
        data-testid="checkpoint-prev"
      >
        ‹ prev
      </button>
      <input
        type="range"
        min={0}
        max={props.count - 1}
        value={props.at}
        onInput={(e) => props.go(Number(e.currentTarget.value))}
        data-testid="checkpoint-slider"
        aria-label="checkpoint"
      />
      <button
        type="button"
        onClick={() => props.go(props.at + 1)}
        disabled={props.at === props.count - 1}
        data-testid="checkpoint-next"
      >
        next ›
      </button>
      <span class="small muted">
        step {props.at + 1} of {props.count}
      </span>
    </div>
  );
}

/** One checkpoint: the step's arguments and result, and the run's transitions up to its end. */
function CheckpointDetail(props: { step: StepRecord; transitions: TransitionRecord[] }) {
  const { step } = props;
  const until = step.endedAt ?? step.startedAt;
  const before = props.transitions.filter((t) => t.at <= until);
  const last = before[before.length - 1];
  return (
    <div class="checkpoint-detail" data-testid="checkpoint-detail">
      <h3>
        Step {step.seq}: <code>{step.name}</code> <span class="muted small">({step.kind})</span>{" "}
        <StatusPill status={step.status} />
      </h3>
      <p class="small muted">
        {clockMs(step.startedAt)}
        {step.endedAt !== null && ` → ${clockMs(step.endedAt)} (${span(step.endedAt - step.startedAt)})`} ·{" "}
        {step.attempts.length} attempt{step.attempts.length === 1 ? "" : "s"}
        {last && (
          <>
            {" "}
            · run was <StateBadge state={last.to} />
          </>
        )}
      </p>
      <StepArgsResult step={step} />
      <h4>Transitions up to this point</h4>
      <ol class="mini-timeline">
        {before.map((t) => (
          <li key={t.id}>
            <span class="small muted">{clockMs(t.at)}</span> {t.from ?? "·"} → <strong>{t.to}</strong>
            {t.pausedReason ? ` (${t.pausedReason})` : ""} <span class="muted">by {actorLabel(t.actor)}</span>
            {t.reason && <span class="muted"> — {t.reason}</span>}
          </li>
        ))}
      </ol>
    </div>
  );
}
