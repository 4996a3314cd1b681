import { Fragment } from "preact";
import { useState } from "preact/hooks";
import type { RunRecord, StepRecord, TransitionRecord } from "../../src/api/http-api.ts";
import type { EffectEntry } from "./api.ts";
import { ErrorView, JsonBlock, StateBadge, StatusPill, StepArgsResult, Time, useNow } from "./components.tsx";
import { Conversation } from "./conversation.tsx";
import { actorLabel, clockMs, count, dateTime, money, oneLine, span } from "./format.ts";
import { Reconcile } from "./reconcile.tsx";
import { useCan } from "./session.ts";

/** The run page's tables: the transition timeline, the steps, the effect ledger. */

export function Timeline(props: { transitions: TransitionRecord[] }) {
  return (
    <div class="table-wrap">
      <table class="table timeline" data-testid="timeline">
        <thead>
          <tr>
            <th class="num">#</th>
            <th>Time</th>
            <th>Transition</th>
            <th>Paused reason</th>
            <th>Actor</th>
            <th>Reason</th>
          </tr>
        </thead>
        <tbody>
          {props.transitions.map((t) => (
            <tr key={t.id} data-testid={`transition-${t.id}`}>
              <td class="num muted">{t.id}</td>
              <td class="nowrap small" title={dateTime(t.at)}>
                {clockMs(t.at)}
              </td>
              <td class="nowrap">
                {t.from ? <StateBadge state={t.from} /> : <span class="muted">·</span>}
                <span class="arrow">→</span>
                <StateBadge state={t.to} />
              </td>
              <td>{t.pausedReason ?? ""}</td>
              <td class="nowrap">
                <span class={`actor actor-${t.actor.kind}`}>{actorLabel(t.actor)}</span>
              </td>
              <td class="wrap">{t.reason}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function StepsTable(props: {
  steps: StepRecord[];
  streams: ReadonlyMap<number, StreamText>;
  /** The run is settled: a step still "started" will not finish by itself. */
  settled: boolean;
}) {
  const [open, setOpen] = useState<ReadonlySet<number>>(new Set());
  const toggle = (seq: number) =>
    setOpen((old) => {
      const next = new Set(old);
      if (next.has(seq)) next.delete(seq);
      else next.add(seq);
      return next;
    });
  return (
    <div class="table-wrap">
      <table class="table steps" data-testid="steps-table">
        <thead>
          <tr>
            <th class="num">Seq</th>
            <th>Kind</th>
            <th>Name</th>
            <th>Status</th>
            <th>Started</th>
            <th class="num">Duration</th>
            <th class="num">Attempts</th>
            <th class="num">Tokens</th>
            <th class="num">Cost</th>
          </tr>
        </thead>
        <tbody>
          {props.steps.map((step) => (
            <StepRow
              key={step.seq}
              step={step}
              stream={props.streams.get(step.seq)}
              isOpen={open.has(step.seq)}
              toggle={toggle}
              settled={props.settled}
            />
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A step's row, and its details below it when open. */
function StepRow(props: {
  step: StepRecord;
  stream: StreamText | undefined;
  isOpen: boolean;
  toggle: (seq: number) => void;
  settled: boolean;
}) {
  const { step } = props;
  const failedAttempts = step.attempts.filter((a) => a.error).length;
  return (
    <Fragment>
      <tr
        data-testid={`step-row-${step.seq}`}
        class={`clickable${props.isOpen ? " open" : ""}`}
        onClick={() => props.toggle(step.seq)}
      >
        <td class="num">
          <span class="caret">{props.isOpen ? "▾" : "▸"}</span>
          {step.seq}
        </td>
        <td>
          <span class={`kind kind-${step.kind}`}>{step.kind}</span>
        </td>
        <td class="wrap">
          <code>{step.name}</code>
          {step.effect && <span class="pill tone-purple small">effect</span>}
        </td>
        <td>
          <StatusPill status={step.status} />
        </td>
        <td class="nowrap small" title={dateTime(step.startedAt)}>
          {clockMs(step.startedAt)}
        </td>
        <td class="num nowrap">
          <StepDuration step={step} settled={props.settled} />
        </td>
        <td class="num">
          <button
            type="button"
            class="link"
            title="show attempts"
            onClick={(e) => {
              e.stopPropagation();
              props.toggle(step.seq);
            }}
            data-testid={`attempts-${step.seq}`}
          >
            {step.attempts.length}
          </button>
          {failedAttempts > 0 && <span class="bad small"> ({failedAttempts} failed)</span>}
        </td>
        <td class="num nowrap small">
          {step.usage ? `${count(step.usage.inputTokens)} / ${count(step.usage.outputTokens)}` : ""}
        </td>
        <td class="num">{step.usage ? money(step.usage.costUsd) : ""}</td>
      </tr>
      {props.isOpen && (
        <tr class="detail">
          <td colSpan={9}>
            <StepDetail step={step} stream={props.stream} />
          </td>
        </tr>
      )}
    </Fragment>
  );
}

/** How long a step took, or has been running; "unfinished" once the run settled without it. */
function StepDuration(props: { step: StepRecord; settled: boolean }) {
  const { step } = props;
  return step.endedAt !== null ? (
    span(step.endedAt - step.startedAt)
  ) : props.settled ? (
    <span class="muted" title="the run settled before this step ended">
      unfinished
    </span>
  ) : (
    <RunningFor since={step.startedAt} />
  );
}

/** How long something has been running, ticking. */
function RunningFor(props: { since: number }) {
  const now = useNow(1000);
  return <span class="muted">{span(Math.max(0, now - props.since))}…</span>;
}

/** Text a model call is streaming, per step. */
export interface StreamText {
  attempt: number;
  text: string;
  done: boolean;
  /** The attempt waits for a slot of a rate limit before it begins (a `step.rate_limited` event). */
  slot?: SlotWaitEvent | undefined;
}

/** What a `step.rate_limited` event says: which call waits, for which limit, until when. */
export interface SlotWaitEvent {
  kind: string;
  name: string;
  rateLimit: string;
  /** The limit in words: `2 per 1m`. */
  rule: string;
  /** When its slot comes (epoch ms). */
  until: number;
}

export function StepDetail(props: { step: StepRecord; stream?: StreamText | undefined }) {
  const { step, stream } = props;
  return (
    <div class="step-detail" data-testid={`step-detail-${step.seq}`}>
      {step.attempts.length > 0 && (
        <div>
          <h4>Attempts</h4>
          <ol class="attempts">
            {step.attempts.map((a) => (
              <li key={a.attempt} class={a.error ? "failed" : ""}>
                <span class="mono">#{a.attempt}</span> {clockMs(a.startedAt)}
                {a.endedAt !== null ? ` · ${span(a.endedAt - a.startedAt)}` : " · running"}
                {a.error && <ErrorView error={a.error} />}
              </li>
            ))}
          </ol>
        </div>
      )}
      {step.kind === "llm" ? (
        <Conversation step={step} streaming={stream?.text} />
      ) : (
        <StepArgsResult step={step} streaming={stream?.text} />
      )}
      {step.heartbeat !== undefined && (
        <div>
          <h4>Last heartbeat</h4>
          <JsonBlock value={step.heartbeat} />
        </div>
      )}
      {step.usage && (
        <p class="small muted">
          {count(step.usage.modelCalls)} model call{step.usage.modelCalls === 1 ? "" : "s"},{" "}
          {count(step.usage.inputTokens)} tokens in, {count(step.usage.outputTokens)} out, {money(step.usage.costUsd)}
        </p>
      )}
      <p class="small muted mono">args digest {step.argsDigest}</p>
    </div>
  );
}

export function EffectsTable(props: { run: RunRecord; effects: EffectEntry[]; onDone: () => void }) {
  const allowed = useCan("operate");
  const canReconcile = props.run.state === "NEEDS_RECONCILIATION" && allowed;
  return (
    <div class="table-wrap">
      <table class="table effects" data-testid="effects-table">
        <thead>
          <tr>
            <th>Effect</th>
            <th>Tool</th>
            <th>Idempotency key</th>
            <th>Status</th>
            <th>Receipt</th>
            <th>Settled by</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {props.effects.map(({ seq, name, effect }) => (
            <tr key={effect.id} data-testid={`effect-row-${effect.id}`}>
              <td class="mono nowrap">
                {effect.id}
                {effect.compensates !== undefined && <div class="small muted">undoes step {effect.compensates}</div>}
              </td>
              <td>
                <code>{name}</code>
                <div class="small muted">step {seq}</div>
              </td>
              <td class="mono small wrap">{effect.idempotencyKey}</td>
              <td>
                <StatusPill status={effect.status} />
                {effect.unknown && <div class="small muted wrap">{effect.unknown}</div>}
              </td>
              <td class="mono small wrap" title={effect.receipt === undefined ? "" : JSON.stringify(effect.receipt)}>
                {effect.receipt === undefined ? <span class="muted">—</span> : oneLine(effect.receipt, 80)}
              </td>
              <td class="small">
                {effect.settledBy ?? <span class="muted">—</span>}
                {effect.reconciliation && (
                  <div>
                    {actorLabel(effect.reconciliation.by)} · <Time at={effect.reconciliation.at} />
                    {effect.reconciliation.note && <div class="muted">{effect.reconciliation.note}</div>}
                  </div>
                )}
                {!effect.reconciliation && effect.settledAt !== undefined && (
                  <div class="muted">
                    <Time at={effect.settledAt} />
                  </div>
                )}
              </td>
              <td>
                {canReconcile && effect.status === "unknown" && (
                  <Reconcile runId={props.run.id} entry={{ seq, name, effect }} onDone={props.onDone} />
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
