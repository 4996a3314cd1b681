import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { api, type ScheduleInfo } from "./api.ts";
import { ErrorText, StateBadge, Time, useNow } from "./components.tsx";
import { dateTimeIn, interval, until } from "./format.ts";
import { runHref } from "./router.ts";
import { ScheduleActions } from "./schedule-actions.tsx";
import { useCan } from "./session.ts";

/**
 * The schedules (`GET /api/schedules`, DESIGN §4 *Schedules*): each one's target, timing, policies,
 * state, last tick and its run, and its next ten fire times, with Pause, Resume and Trigger now for
 * a role that may change schedules. No stream tells of ticks: the page reloads every few seconds.
 */

/** How often the list is reloaded while the tab is shown. */
const REFRESH_MS = 5_000;

const OVERLAP_WORDS: Record<ScheduleInfo["overlap"], string> = {
  skip: "a tick is skipped while the previous run has not ended",
  bufferOne: "a tick waits for the previous run to end (one at most; more are skipped)",
  allow: "runs side by side",
  cancelPrevious: "a tick cancels the previous run, then starts its own",
};

const CATCH_UP_WORDS: Record<ScheduleInfo["catchUp"], string> = {
  none: "ticks missed while no worker ran are dropped",
  latest: "the last tick missed while no worker ran fires",
  all: "every tick missed while no worker ran fires, oldest first",
};

export function SchedulesPage() {
  const [schedules, setSchedules] = useState<ScheduleInfo[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const mounted = useRef(true);
  const allowed = useCan("operate");

  const load = useCallback(async () => {
    try {
      const { schedules } = await api.schedules();
      if (!mounted.current) return;
      setSchedules(schedules);
      setError(null);
    } catch (e) {
      if (mounted.current) setError((e as Error).message);
    }
  }, []);

  useEffect(() => {
    mounted.current = true;
    void load();
    const timer = setInterval(() => {
      if (document.visibilityState === "visible") void load();
    }, REFRESH_MS);
    return () => {
      mounted.current = false;
      clearInterval(timer);
    };
  }, [load]);

  return (
    <div class="page schedules-page" data-testid="schedules-page">
      <div class="table-head">
        <h2>Schedules {schedules && <span class="muted small">{schedules.length}</span>}</h2>
        {!allowed && (
          <span class="muted small" data-testid="schedules-read-only">
            your roles do not allow changing schedules (operator or admin)
          </span>
        )}
      </div>
      <ErrorText error={error} testid="schedules-error" />
      {schedules === null ? (
        !error && <p class="loading">loading schedules…</p>
      ) : schedules.length === 0 ? (
        <p class="empty" data-testid="schedules-empty">
          No schedules. Define them in code (<code>runtime.schedule(...)</code>) or over HTTP (
          <code>PUT /api/schedules/{"{id}"}</code>).
        </p>
      ) : (
        <div class="schedules">
          {schedules.map((s) => (
            <ScheduleCard key={s.id} schedule={s} onChanged={load} />
          ))}
        </div>
      )}
    </div>
  );
}

/** One schedule: what it starts, when, its policies and state, its last tick, next times and actions. */
function ScheduleCard(props: { schedule: ScheduleInfo; onChanged: () => Promise<void> }) {
  const { schedule: s } = props;
  return (
    <article class="card schedule" data-testid={`schedule-${s.id}`}>
      <header class="schedule-title">
        <h3 class="mono">{s.id}</h3>
        <span class={`badge tone-${s.paused ? "amber" : "green"}`} data-testid="schedule-state">
          {s.paused ? "paused" : "active"}
        </span>
      </header>
      <div class="schedule-body">
        <dl class="facts">
          <dt>Starts</dt>
          <dd data-testid="schedule-target">
            <span class="agent">{s.agent}</span>
            <span class="muted"> / </span>
            <strong>{s.workflow}</strong>
          </dd>
          <dt>When</dt>
          <dd data-testid="schedule-timing">
            {s.everyMs !== null ? (
              <>every {interval(s.everyMs)}</>
            ) : (
              <>
                <code>{s.cron}</code> in {s.timeZone}
              </>
            )}
          </dd>
          <dt>Overlap</dt>
          <dd data-testid="schedule-overlap">
            {s.overlap} <span class="muted small">· {OVERLAP_WORDS[s.overlap]}</span>
          </dd>
          <dt>Catch-up</dt>
          <dd data-testid="schedule-catch-up">
            {s.catchUp}
            {s.catchUp === "all" && ` (at most ${s.catchUpLimit})`}{" "}
            <span class="muted small">· {CATCH_UP_WORDS[s.catchUp]}</span>
          </dd>
          <LastTick schedule={s} />
        </dl>
        <NextTimes schedule={s} />
      </div>
      <ScheduleActions schedule={s} onChanged={props.onChanged} />
    </article>
  );
}

/**
 * The last tick handled (fired, buffered or skipped), the last run started (by a tick or a
 * trigger) as it is now, and a tick in flight.
 */
function LastTick(props: { schedule: ScheduleInfo }) {
  const { schedule: s } = props;
  return (
    <>
      <dt>Last tick</dt>
      <dd data-testid="schedule-last-tick">
        {s.lastTickAt === null ? <span class="muted">none yet</span> : <Time at={s.lastTickAt} />}
      </dd>
      <dt>Last run</dt>
      <dd>
        {s.lastRunId === null ? (
          <span class="muted" data-testid="schedule-last-run">
            none yet
          </span>
        ) : (
          <>
            <a href={runHref(s.lastRunId)} class="mono" data-testid="schedule-last-run">
              {s.lastRunId}
            </a>{" "}
            {s.lastRun ? (
              <>
                <StateBadge state={s.lastRun.state} testid="schedule-last-run-state" />
                {s.lastRun.scheduledFor && (
                  <span class="muted small" data-testid="schedule-last-run-tick">
                    {" "}
                    for the tick of <Time at={Date.parse(s.lastRun.scheduledFor)} />
                  </span>
                )}
              </>
            ) : (
              <span class="muted small">(pruned)</span>
            )}
          </>
        )}
      </dd>
      {s.pendingAt !== null && (
        <>
          <dt>Starting</dt>
          <dd data-testid="schedule-pending">
            the tick of <Time at={s.pendingAt} />: a worker running {s.agent} starts its run
          </dd>
        </>
      )}
      {s.bufferedAt !== null && (
        <>
          <dt>Buffered</dt>
          <dd data-testid="schedule-buffered">
            the tick of <Time at={s.bufferedAt} /> starts when the last run ends
          </dd>
        </>
      )}
    </>
  );
}

/** The next ten fire times: local time, the cron zone's time, and how far off. */
function NextTimes(props: { schedule: ScheduleInfo }) {
  const { schedule: s } = props;
  const now = useNow(5_000);
  const zone = s.cron !== null ? s.timeZone : null;
  return (
    <div class="next-times">
      <h4>Next times</h4>
      {s.nextTimes.length === 0 ? (
        <p class="muted small" data-testid="schedule-no-next">
          {s.paused ? "none while paused" : "none: the cron expression has no more"}
        </p>
      ) : (
        <ol data-testid="schedule-next-times">
          {s.nextTimes.map((at) => {
            const there = zone === null ? undefined : dateTimeIn(at, zone);
            return (
              <li key={at} data-at={at}>
                <Time at={at} /> <span class="muted small">{until(at, now)}</span>
                {there && (
                  <span class="muted small zone-time">
                    {" "}
                    · {there} {zone}
                  </span>
                )}
              </li>
            );
          })}
        </ol>
      )}
    </div>
  );
}
