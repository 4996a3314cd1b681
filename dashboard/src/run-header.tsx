import { useState } from "preact/hooks";
import { type RunRecord, TERMINAL_STATES } from "../../src/api/http-api.ts";
import { api, type LiveStatus } from "./api.ts";
import { Age, ErrorText, ErrorView, LiveDot, Loading, NoteInput, StateBadge, Time, useAction } from "./components.tsx";
import { actorLabel, count, money } from "./format.ts";
import { runHref } from "./router.ts";
import { refusal, useCan } from "./session.ts";

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
          <NoteInput value={note} onChange={setNote} testid="acceptance-note" />
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
            <NoteInput value={reason} onChange={setReason} testid="cancel-reason" placeholder="reason (optional)" />
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
