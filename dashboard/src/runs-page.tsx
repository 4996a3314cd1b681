import { useMemo } from "preact/hooks";
import type { AgentInfo, RunFilter } from "./api.ts";
import { ErrorText, LiveDot } from "./components.tsx";
import { replaceHash, runsHref } from "./router.ts";
import { Filters } from "./run-filters.tsx";
import { RunSearch } from "./run-search.tsx";
import { filterOf, queryOf } from "./runs-filter.ts";
import { RunsTable } from "./runs-table.tsx";
import { StartRunForm } from "./start-run.tsx";
import { useRuns } from "./use-runs.ts";

/** The runs table: filters in the URL, newest first, live updates, "load more". */

export function RunsPage(props: { query: URLSearchParams; agents: AgentInfo[] | null }) {
  const queryText = props.query.toString();
  const filter = useMemo(() => filterOf(props.query), [queryText]);
  const { runs, cursor, loading, error, moreError, loadingMore, live, flash, loadMore } = useRuns(filter);

  const setFilter = (next: RunFilter) => replaceHash(runsHref(queryOf(next)));

  return (
    <div class="page">
      <StartRunForm agents={props.agents} />
      <RunSearch agents={props.agents} filter={filter} onFilter={setFilter} />
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
