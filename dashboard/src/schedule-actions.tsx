import { useState } from "preact/hooks";
import { api, type ScheduleInfo, type ScheduleTrigger } from "./api.ts";
import { ErrorText, useAction } from "./components.tsx";
import { clock } from "./format.ts";
import { runHref } from "./router.ts";
import { useCan } from "./session.ts";

/**
 * What an operator does to a schedule: Pause or Resume, and Trigger now after a confirmation
 * (a run starts whatever the timing, overlap policy or pause). A role that may not change
 * schedules (`operate`: operator or admin) is not shown them; a refusal shows the server's words.
 */
export function ScheduleActions(props: { schedule: ScheduleInfo; onChanged: () => Promise<void> }) {
  const { schedule: s } = props;
  const allowed = useCan("operate");
  const action = useAction();
  const [confirming, setConfirming] = useState(false);
  const [triggered, setTriggered] = useState<ScheduleTrigger | null>(null);
  if (!allowed) return null;

  const act = async (fn: () => Promise<unknown>) => {
    const done = await action.run(fn);
    setConfirming(false);
    // Refused or not, show where the schedule stands now.
    await props.onChanged();
    return done;
  };

  return (
    <div class="run-actions schedule-actions" data-testid="schedule-actions">
      <PauseToggle schedule={s} busy={action.busy} act={act} />
      {confirming ? (
        <span class="confirm" data-testid="schedule-trigger-confirmation">
          <span class="small">
            Start a run of {s.agent} / {s.workflow} now, whatever its timing, overlap policy
            {s.paused ? " or pause" : ""}?
          </span>
          <button
            type="button"
            class="primary"
            disabled={action.busy}
            onClick={() =>
              act(async () => {
                setTriggered(null);
                setTriggered(await api.triggerSchedule(s.id));
              })
            }
            data-testid="schedule-trigger-confirm"
          >
            Start the run
          </button>
          <button type="button" class="link" onClick={() => setConfirming(false)}>
            not now
          </button>
        </span>
      ) : (
        <button
          type="button"
          disabled={action.busy}
          onClick={() => {
            setTriggered(null);
            setConfirming(true);
          }}
          data-testid="schedule-trigger"
        >
          Trigger now…
        </button>
      )}
      {triggered && <Triggered schedule={s} triggered={triggered} />}
      <ErrorText error={action.error} testid="schedule-error" />
    </div>
  );
}

/** Pause, or Resume for a paused schedule. */
function PauseToggle(props: {
  schedule: ScheduleInfo;
  busy: boolean;
  act: (fn: () => Promise<unknown>) => Promise<unknown>;
}) {
  const { schedule: s, busy, act } = props;
  return s.paused ? (
    <button
      type="button"
      class="primary"
      disabled={busy}
      title="ticks fire again from the next one after now (those missed while paused do not)"
      onClick={() => act(() => api.resumeSchedule(s.id))}
      data-testid="schedule-resume"
    >
      Resume
    </button>
  ) : (
    <button
      type="button"
      disabled={busy}
      title="no tick fires until it is resumed"
      onClick={() => act(() => api.pauseSchedule(s.id))}
      data-testid="schedule-pause"
    >
      Pause
    </button>
  );
}

/** What a trigger did: the run it started, or the tick a worker running the agent starts. */
function Triggered(props: { schedule: ScheduleInfo; triggered: ScheduleTrigger }) {
  const { runId, tickAt } = props.triggered;
  return (
    <span class="small ok" data-testid="schedule-triggered">
      {runId ? (
        <>
          started run{" "}
          <a href={runHref(runId)} class="mono">
            {runId}
          </a>
        </>
      ) : (
        <>
          tick of {clock(tickAt)} marked: a worker running {props.schedule.agent} starts its run
        </>
      )}
    </span>
  );
}
