import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import { PAUSED_REASONS, RUN_STATES, type RunRecord } from "../../src/api/http-api.ts";
import {
  type AgentInfo,
  api,
  CREATED_WINDOWS,
  createdSince,
  type LiveStatus,
  listRuns,
  type RunFilter,
  subscribe,
} from "./api.ts";
import { Age, ErrorText, LiveDot, StateBadge, Time } from "./components.tsx";
import { money, shortId } from "./format.ts";
import { replaceHash, runHref, runsHref } from "./router.ts";
import { StartRunForm } from "./start-run.tsx";

/** The runs table: filters in the URL, newest first, live updates, "load more". */

function filterOf(query: URLSearchParams): RunFilter {
  const filter: RunFilter = {};
  const agent = query.get("agent");
  const workflow = query.get("workflow");
  const state = query.get("state");
  const pausedReason = query.get("pausedReason");
  const created = query.get("created");
  if (agent) filter.agent = agent;
  if (workflow) filter.workflow = workflow;
  if (state) filter.state = state.split(",").filter(Boolean);
  if (pausedReason) filter.pausedReason = pausedReason;
  if (created && created in CREATED_WINDOWS) filter.created = created;
  return filter;
}

function queryOf(filter: RunFilter): URLSearchParams {
  const q = new URLSearchParams();
  if (filter.agent) q.set("agent", filter.agent);
  if (filter.workflow) q.set("workflow", filter.workflow);
  if (filter.state?.length) q.set("state", filter.state.join(","));
  if (filter.pausedReason) q.set("pausedReason", filter.pausedReason);
  if (filter.created) q.set("created", filter.created);
  return q;
}

function matches(run: RunRecord, filter: RunFilter): boolean {
  if (filter.agent && run.agent !== filter.agent) return false;
  if (filter.workflow && run.workflow !== filter.workflow) return false;
  if (filter.state?.length && !filter.state.includes(run.state)) return false;
  if (filter.pausedReason && run.pausedReason !== filter.pausedReason) return false;
  const since = createdSince(filter);
  if (since !== undefined && run.createdAt < since) return false;
  return true;
}

export function RunsPage(props: { query: URLSearchParams; agents: AgentInfo[] | null }) {
  const queryText = props.query.toString();
  const filter = useMemo(() => filterOf(props.query), [queryText]);
  const [runs, setRuns] = useState<RunRecord[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<string | null>(null);
  const [moreError, setMoreError] = useState<string | null>(null);
  const [loadingMore, setLoadingMore] = useState(false);
  const [live, setLive] = useState<LiveStatus>("connecting");
  const [flash, setFlash] = useState<ReadonlySet<string>>(new Set());
  const generation = useRef(0);
  const filterRef = useRef(filter);
  filterRef.current = filter;
  const runsRef = useRef(runs);
  runsRef.current = runs;

  const loadFirst = useCallback(() => {
    const mine = ++generation.current;
    setLoading(true);
    listRuns(filterRef.current).then(
      (page) => {
        if (mine !== generation.current) return;
        setRuns(page.runs);
        setCursor(page.nextCursor);
        setError(null);
        setLoading(false);
      },
      (e: Error) => {
        if (mine !== generation.current) return;
        setError(e.message);
        setRuns((old) => old ?? []);
        setLoading(false);
      },
    );
  }, []);

  useEffect(() => {
    setMoreError(null);
    loadFirst();
  }, [filter, loadFirst]);

  // Live updates: patch the row at once from the event, then refetch the run (batched).
  useEffect(() => {
    const pending = new Set<string>();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const flushSoon = () => {
      if (timer) return;
      timer = setTimeout(flush, 300);
    };
    const flush = () => {
      timer = undefined;
      const ids = [...pending];
      pending.clear();
      for (const id of ids) {
        api.run(id).then(
          ({ run }) => {
            setRuns((old) => {
              if (!old) return old;
              const at = old.findIndex((r) => r.id === run.id);
              if (at >= 0) return old.map((r) => (r.id === run.id ? run : r));
              if (!matches(run, filterRef.current)) return old;
              return [run, ...old];
            });
            setFlash((old) => new Set(old).add(run.id));
            setTimeout(
              () =>
                setFlash((old) => {
                  const next = new Set(old);
                  next.delete(run.id);
                  return next;
                }),
              1200,
            );
          },
          () => {},
        );
      }
    };
    const stop = subscribe("/api/events", {
      onStatus: setLive,
      onReopen: loadFirst,
      onEvent: (type, data) => {
        const runId = typeof data.runId === "string" ? data.runId : null;
        if (!runId) return;
        if (type !== "transition") return;
        const tid = typeof data.id === "number" ? data.id : null;
        const to = typeof data.to === "string" ? data.to : typeof data.state === "string" ? data.state : null;
        const pausedReason = (data.pausedReason as RunRecord["pausedReason"]) ?? null;
        const row = runsRef.current?.find((r) => r.id === runId);
        if (row) {
          if (tid !== null && tid <= row.lastTransitionId) return;
          if (to) {
            setRuns((old) =>
              (old ?? []).map((r) =>
                r.id === runId
                  ? {
                      ...r,
                      state: to as RunRecord["state"],
                      pausedReason,
                      ...(tid !== null ? { lastTransitionId: tid } : {}),
                      updatedAt: typeof data.at === "number" ? data.at : Date.now(),
                    }
                  : r,
              ),
            );
          }
        } else if (typeof data.agent === "string" && typeof data.workflow === "string" && to) {
          // A run not shown: fetched only if it belongs in the table as filtered.
          const f = filterRef.current;
          if (f.agent && f.agent !== data.agent) return;
          if (f.workflow && f.workflow !== data.workflow) return;
          if (f.state?.length && !f.state.includes(to)) return;
          if (f.pausedReason && f.pausedReason !== pausedReason) return;
        }
        pending.add(runId);
        flushSoon();
      },
    });
    return () => {
      stop();
      clearTimeout(timer);
    };
  }, [loadFirst]);

  const loadMore = () => {
    if (!cursor) return;
    const mine = generation.current;
    setLoadingMore(true);
    setMoreError(null);
    listRuns(filter, cursor).then(
      (page) => {
        if (mine !== generation.current) return;
        setRuns((old) => {
          const seen = new Set((old ?? []).map((r) => r.id));
          return [...(old ?? []), ...page.runs.filter((r) => !seen.has(r.id))];
        });
        setCursor(page.nextCursor);
        setLoadingMore(false);
      },
      (e: Error) => {
        setMoreError(e.message);
        setLoadingMore(false);
      },
    );
  };

  const setFilter = (next: RunFilter) => replaceHash(runsHref(queryOf(next)));

  return (
    <div class="page">
      <StartRunForm agents={props.agents} />
      <Filters filter={filter} agents={props.agents} onChange={setFilter} />
      <div class="table-head">
        <h2>
          Runs{" "}
          {runs && (
            <span class="muted small">
              {runs.length}
              {cursor ? "+" : ""}
            </span>
          )}
        </h2>
        <LiveDot status={live} />
        {loading && runs !== null && <span class="muted small">updating…</span>}
      </div>
      <ErrorText error={error} />
      {runs === null ? (
        <p class="loading">loading runs…</p>
      ) : (
        (runs.length > 0 || !error) && <RunsTable runs={runs} flash={flash} />
      )}
      {runs !== null && runs.length === 0 && !loading && !error && (
        <p class="empty">{Object.keys(filter).length ? "No run matches these filters." : "No runs yet."}</p>
      )}
      {cursor && (
        <div class="more">
          <button type="button" onClick={loadMore} disabled={loadingMore} data-testid="load-more">
            {loadingMore ? "Loading…" : "Load more"}
          </button>
          <ErrorText error={moreError} />
        </div>
      )}
    </div>
  );
}

function RunsTable(props: { runs: RunRecord[]; flash: ReadonlySet<string> }) {
  return (
    <div class="table-wrap">
      <table class="table runs" data-testid="runs-table">
        <thead>
          <tr>
            <th>Run</th>
            <th>Agent / workflow</th>
            <th>State</th>
            <th>Paused reason</th>
            <th>Age</th>
            <th class="num">Cost</th>
            <th>Updated</th>
          </tr>
        </thead>
        <tbody>
          {props.runs.map((run) => (
            <tr
              key={run.id}
              data-testid={`run-row-${run.id}`}
              class={props.flash.has(run.id) ? "flash" : undefined}
              onClick={(e) => {
                if ((e.target as HTMLElement).closest("a")) return;
                location.hash = runHref(run.id);
              }}
            >
              <td>
                <a href={runHref(run.id)} class="mono" title={run.id}>
                  {shortId(run.id)}
                </a>
              </td>
              <td>
                <span class="agent">{run.agent}</span>
                <span class="muted"> / </span>
                {run.workflow}
              </td>
              <td>
                <StateBadge state={run.state} testid="run-state" />
                {run.acceptance && (
                  <span
                    class={`pill tone-${run.acceptance.decision === "accepted" ? "green" : "red"}`}
                    title={run.acceptance.note}
                  >
                    {run.acceptance.decision}
                  </span>
                )}
              </td>
              <td>{run.pausedReason ?? <span class="muted">—</span>}</td>
              <td>
                <Age at={run.createdAt} />
              </td>
              <td class="num">{money(run.usage?.costUsd)}</td>
              <td class="small">
                <Time at={run.updatedAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Filters(props: { filter: RunFilter; agents: AgentInfo[] | null; onChange: (filter: RunFilter) => void }) {
  const { filter, agents, onChange } = props;
  const states = new Set(filter.state ?? []);
  const workflows = agents?.find((a) => a.name === filter.agent)?.workflows ?? [];
  const toggle = (state: string) => {
    const next = new Set(states);
    if (next.has(state)) next.delete(state);
    else next.add(state);
    const { state: _, ...rest } = filter;
    onChange(next.size ? { ...rest, state: RUN_STATES.filter((s) => next.has(s)) } : rest);
  };
  const set = (key: "agent" | "workflow" | "pausedReason" | "created", value: string) => {
    const next: RunFilter = { ...filter };
    if (value) next[key] = value;
    else delete next[key];
    if (key === "agent") delete next.workflow;
    onChange(next);
  };
  const any = Object.keys(filter).length > 0;
  return (
    <div class="filters" data-testid="run-filters">
      <FilterSelect
        label="Agent"
        value={filter.agent}
        any="all"
        options={[
          ...(agents ?? []).map((a) => ({ value: a.name, label: a.name })),
          ...(filter.agent && !agents?.some((a) => a.name === filter.agent)
            ? [{ value: filter.agent, label: filter.agent }]
            : []),
        ]}
        onChange={(value) => set("agent", value)}
        testid="filter-agent"
      />
      {filter.agent && (
        <FilterSelect
          label="Workflow"
          value={filter.workflow}
          any="all"
          options={workflows.map((w) => ({ value: w, label: w }))}
          onChange={(value) => set("workflow", value)}
          testid="filter-workflow"
        />
      )}
      <FilterSelect
        label="Paused reason"
        value={filter.pausedReason}
        any="any"
        options={PAUSED_REASONS.map((r) => ({ value: r, label: r }))}
        onChange={(value) => set("pausedReason", value)}
        testid="filter-paused-reason"
      />
      <FilterSelect
        label="Created"
        value={filter.created}
        any="any time"
        options={Object.entries(CREATED_WINDOWS).map(([key, window]) => ({ value: key, label: window.label }))}
        onChange={(value) => set("created", value)}
        testid="filter-created"
      />
      <fieldset class="states" data-testid="filter-state">
        <legend>State</legend>
        {RUN_STATES.map((s) => (
          <button
            key={s}
            type="button"
            class={`chip${states.has(s) ? " on" : ""}`}
            aria-pressed={states.has(s)}
            onClick={() => toggle(s)}
            data-testid={`filter-state-${s}`}
          >
            {s}
          </button>
        ))}
      </fieldset>
      {any && (
        <button type="button" class="link" onClick={() => onChange({})}>
          clear filters
        </button>
      )}
    </div>
  );
}

/** One filter of the runs table: a labelled select whose first option ("" = `any`) leaves it off. */
function FilterSelect(props: {
  label: string;
  value: string | undefined;
  any: string;
  options: { value: string; label: string }[];
  onChange: (value: string) => void;
  testid: string;
}) {
  return (
    <label>
      {props.label}
      <select
        value={props.value ?? ""}
        onChange={(e) => props.onChange(e.currentTarget.value)}
        data-testid={props.testid}
      >
        <option value="">{props.any}</option>
        {props.options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
    </label>
  );
}
