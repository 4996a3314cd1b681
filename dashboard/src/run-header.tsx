import { type RunRecord, slotWait } from "../../src/api/http-api.ts";
import type { LiveStatus } from "./api.ts";
import { Age, ErrorText, ErrorView, LiveDot, Loading, StateBadge, Time, useNow } from "./components.tsx";
import { actorLabel, count, money } from "./format.ts";
import { runHref } from "./router.ts";
import { RunActions } from "./run-actions.tsx";

/** The head of a run page: id, state, agent, times, cost, and the acts its state allows. */

export function RunHeader(props: {
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
        {run && <SlotWait run={run} />}
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
          <RunFacts run={run} />
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

/** "waiting for a slot of key … (limit …)" while a keyed run is not claimed: as `cairn runs` says it. */
function SlotWait(props: { run: RunRecord }) {
  const now = useNow(5_000);
  const wait = slotWait(props.run, now);
  if (!wait) return null;
  return (
    <span class="paused-reason slot-wait" data-testid="run-slot-wait">
      {wait}
    </span>
  );
}

/** The run's concurrency key and limit, and its priority, as `cairn show` words them; nothing without either. */
function FlowFact(props: { run: RunRecord }) {
  const { run } = props;
  if (run.concurrencyKey === undefined && run.priority === undefined) return null;
  const parts = [
    run.concurrencyKey === undefined ? "" : `concurrency key "${run.concurrencyKey}" (limit ${run.concurrencyLimit})`,
    run.priority === undefined ? "" : `priority ${run.priority}`,
  ].filter(Boolean);
  return (
    <>
      <dt>Flow</dt>
      <dd data-testid="run-flow">{parts.join(", ")}</dd>
    </>
  );
}

/** What is known of the run: agent and workflow, key, flow control, times, cost, worker, related runs. */
function RunFacts(props: { run: RunRecord }) {
  const { run } = props;
  return (
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
      <FlowFact run={run} />
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
            · {count(run.usage.inputTokens)} in / {count(run.usage.outputTokens)} out · {count(run.usage.modelCalls)}{" "}
            model calls · {count(run.usage.toolCalls)} tool calls · {count(run.usage.steps)} steps
          </span>
        )}
      </dd>
      {run.leaseOwner && (
        <>
          <dt>Worker</dt>
          <dd class="mono small">{run.leaseOwner}</dd>
        </>
      )}
      <RelatedRuns run={run} />
    </dl>
  );
}

/** The parent run and the runs this one continues or is continued as; nothing when none. */
function RelatedRuns(props: { run: RunRecord }) {
  const { run } = props;
  const forks = run.forks ?? [];
  if (!(run.parentRunId || run.continuedFrom || run.continuedTo || run.forkedFrom || forks.length > 0)) return null;
  return (
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
            continued as <a href={runHref(run.continuedTo)}>{run.continuedTo}</a>{" "}
          </span>
        )}
        {run.forkedFrom && (
          <span data-testid="forked-from">
            {run.forkedFrom.kind === "rerun" ? "rerun of" : "forked from"}{" "}
            <a href={runHref(run.forkedFrom.runId)}>{run.forkedFrom.runId}</a> at step {run.forkedFrom.fromStep}{" "}
          </span>
        )}
        {forks.map((fork) => (
          <span key={fork.runId} data-testid="fork-link">
            {fork.kind} from step {fork.fromStep}: <a href={runHref(fork.runId)}>{fork.runId}</a>{" "}
          </span>
        ))}
      </dd>
    </>
  );
}
