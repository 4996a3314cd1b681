import { useState } from "preact/hooks";
import { type RunRecord, TERMINAL_STATES } from "../../src/api/http-api.ts";
import { api } from "./api.ts";
import { ErrorText, NoteInput, useAction } from "./components.tsx";
import { navigate, runHref } from "./router.ts";
import { refusal, useCan } from "./session.ts";

/** The acts a run's state allows (resume, rerun, fork, accept or reject, cancel) and the export of its contract. */

const RESUMABLE_ERRORS = new Set(["REPLAY_DIVERGENCE", "VERSION_MISMATCH"]);

/** Which acts the run's state allows. */
function actsOf(run: RunRecord) {
  const canCancel = (!TERMINAL_STATES.has(run.state) || run.state === "INTERRUPTED") && run.state !== "CANCELLING";
  const canResume =
    run.state === "INTERRUPTED" ||
    (run.state === "PAUSED" && run.pausedReason === "suspended_orphan") ||
    (run.state === "FAILED" && RESUMABLE_ERRORS.has(run.error?.code ?? ""));
  const canJudge = run.state === "COMPLETED" && !run.acceptance;
  const canRerun = run.state === "FAILED" && !canResume;
  return { canCancel, canResume, canJudge, canRerun };
}

export function RunActions(props: { run: RunRecord; onDone: () => void }) {
  const { run } = props;
  const action = useAction();
  const [confirming, setConfirming] = useState(false);
  const [reason, setReason] = useState("");
  const [note, setNote] = useState("");
  const allowed = useCan("operate");
  // What the role may not do is not shown: a viewer sees the export alone.
  const { canCancel, canResume, canJudge, canRerun } = allowed
    ? actsOf(run)
    : { canCancel: false, canResume: false, canJudge: false, canRerun: false };
  const denied = allowed ? undefined : refusal("operate");
  const act = async (fn: () => Promise<unknown>) => {
    if (await action.run(fn)) {
      setConfirming(false);
      props.onDone();
    }
  };
  const gate = { busy: action.busy, allowed, denied };

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
      {allowed && <ForkRun {...gate} run={run} canRerun={canRerun} act={act} />}
      {canJudge && (
        <Verdict
          {...gate}
          note={note}
          setNote={setNote}
          onVerdict={(verdict) =>
            act(() => (verdict === "accept" ? api.accept : api.reject)(run.id, note.trim() || undefined))
          }
        />
      )}
      {canCancel && (
        <CancelRun
          {...gate}
          confirming={confirming}
          setConfirming={setConfirming}
          reason={reason}
          setReason={setReason}
          onCancel={() => act(() => api.cancel(run.id, reason.trim() || undefined))}
        />
      )}
      <button
        type="button"
        class="link"
        disabled={action.busy}
        onClick={() => action.run(() => downloadContract(run.id))}
        data-testid="export-contract"
      >
        Export contract
      </button>
      <ErrorText error={action.error} testid="action-error" />
    </div>
  );
}

/** Whether an act can be asked now: not while one runs, not without the role (`denied` says why). */
interface Gate {
  busy: boolean;
  allowed: boolean;
  denied: string | undefined;
}

/** A new run from this one: from its failed step (a FAILED run), or from a step given; the page goes to it. */
function ForkRun(props: Gate & { run: RunRecord; canRerun: boolean; act: (fn: () => Promise<unknown>) => void }) {
  const { run, act } = props;
  const [fromStep, setFromStep] = useState("1");
  return (
    <>
      {props.canRerun && (
        <button
          type="button"
          class="primary"
          disabled={props.busy || !props.allowed}
          title={
            props.denied ??
            "a new run: the steps before the failed one are kept, the failed one runs on the server's code"
          }
          onClick={() => act(async () => navigate(runHref((await api.rerun(run.id)).run.id)))}
          data-testid="rerun-button"
        >
          Rerun from the failed step
        </button>
      )}
      <span class="fork">
        <input
          type="number"
          min="1"
          value={fromStep}
          onInput={(e) => setFromStep((e.target as HTMLInputElement).value)}
          aria-label="fork from step"
          data-testid="fork-step"
        />
        <button
          type="button"
          disabled={props.busy || !props.allowed}
          title={props.denied ?? "a new run with this run's steps before that one, on the server's code"}
          onClick={() => act(async () => navigate(runHref((await api.fork(run.id, Number(fromStep))).run.id)))}
          data-testid="fork-button"
        >
          Fork from step
        </button>
      </span>
    </>
  );
}

/** Accept or reject a completed run's outcome, with a note. */
function Verdict(
  props: Gate & { note: string; setNote: (note: string) => void; onVerdict: (verdict: "accept" | "reject") => void },
) {
  return (
    <span class="judge">
      <NoteInput value={props.note} onChange={props.setNote} testid="acceptance-note" />
      <button
        type="button"
        class="approve"
        disabled={props.busy || !props.allowed}
        title={props.denied}
        onClick={() => props.onVerdict("accept")}
        data-testid="accept-button"
      >
        Accept
      </button>
      <button
        type="button"
        class="deny"
        disabled={props.busy || !props.allowed}
        title={props.denied}
        onClick={() => props.onVerdict("reject")}
        data-testid="reject-button"
      >
        Reject
      </button>
    </span>
  );
}

/** "Cancel…", then the reason and a confirmation. */
function CancelRun(
  props: Gate & {
    confirming: boolean;
    setConfirming: (confirming: boolean) => void;
    reason: string;
    setReason: (reason: string) => void;
    onCancel: () => void;
  },
) {
  if (!props.confirming) {
    return (
      <button
        type="button"
        disabled={!props.allowed}
        title={props.denied}
        onClick={() => props.setConfirming(true)}
        data-testid="cancel-button"
      >
        Cancel…
      </button>
    );
  }
  return (
    <span class="confirm">
      <NoteInput
        value={props.reason}
        onChange={props.setReason}
        testid="cancel-reason"
        placeholder="reason (optional)"
      />
      <button type="button" class="deny" disabled={props.busy} onClick={props.onCancel} data-testid="cancel-confirm">
        Cancel run
      </button>
      <button type="button" class="link" onClick={() => props.setConfirming(false)}>
        keep it
      </button>
    </span>
  );
}

/** Downloads the run's contract as `<id>.contract.json`. */
async function downloadContract(runId: string): Promise<void> {
  const contract = await api.contract(runId);
  const blob = new Blob([JSON.stringify(contract, null, 2)], { type: "application/json" });
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = `${runId}.contract.json`;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
