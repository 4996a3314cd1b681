import { useState } from "preact/hooks";
import { type AgentInfo, ApiError, api, listRuns, type RunFilter } from "./api.ts";
import { ErrorText } from "./components.tsx";
import { navigate, runHref } from "./router.ts";

/**
 * One box to find runs by run id, idempotency key or agent: an agent's name filters the table by
 * it; a run id opens that run; a key opens its run (or, when runs of several workflows share it,
 * filters the table by it).
 */
export function RunSearch(props: {
  agents: AgentInfo[] | null;
  filter: RunFilter;
  onFilter: (filter: RunFilter) => void;
}) {
  const [text, setText] = useState("");
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);

  const find = async (query: string) => {
    if (props.agents?.some((a) => a.name === query)) return props.onFilter({ ...props.filter, agent: query });
    try {
      const { run } = await api.run(query);
      return navigate(runHref(run.id));
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404)) throw error;
    }
    const { runs } = await listRuns({ key: query }, null, 2);
    const [only] = runs;
    if (runs.length === 1 && only) return navigate(runHref(only.id));
    if (runs.length > 1) return props.onFilter({ key: query });
    setProblem(`No run has the id or the key ${JSON.stringify(query)}, and no agent has that name.`);
  };

  return (
    <form
      class="run-search"
      data-testid="run-search"
      onSubmit={async (e) => {
        e.preventDefault();
        const query = text.trim();
        if (!query) return;
        setBusy(true);
        setProblem(null);
        try {
          await find(query);
        } catch (error) {
          setProblem((error as Error).message);
        } finally {
          setBusy(false);
        }
      }}
    >
      <input
        type="search"
        placeholder="find a run: run id, idempotency key or agent"
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
        data-testid="run-search-input"
        aria-label="find a run by run id, idempotency key or agent"
      />
      <button type="submit" disabled={busy} data-testid="run-search-submit">
        {busy ? "Finding…" : "Find"}
      </button>
      <ErrorText error={problem} testid="run-search-error" />
    </form>
  );
}
