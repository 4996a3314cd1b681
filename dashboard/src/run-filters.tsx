import { PAUSED_REASONS, RUN_STATES } from "../../src/api/http-api.ts";
import { type AgentInfo, CREATED_WINDOWS, type RunFilter } from "./api.ts";

/** The filters above the runs table; each change replaces the URL's query. */
export function Filters(props: {
  filter: RunFilter;
  agents: AgentInfo[] | null;
  onChange: (filter: RunFilter) => void;
}) {
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
  const set = (key: "agent" | "workflow" | "pausedReason" | "created" | "key", value: string) => {
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
        options={agentOptions(agents, filter.agent)}
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
      <StateChips states={states} toggle={toggle} />
      {filter.key && (
        <span class="chip on" data-testid="filter-key">
          key {filter.key}{" "}
          <button type="button" class="link" onClick={() => set("key", "")} aria-label="clear the key filter">
            ×
          </button>
        </span>
      )}
      {any && (
        <button type="button" class="link" onClick={() => onChange({})}>
          clear filters
        </button>
      )}
    </div>
  );
}

/** The agents to choose from, and the one the URL names when the server does not list it. */
function agentOptions(agents: AgentInfo[] | null, chosen: string | undefined): { value: string; label: string }[] {
  return [
    ...(agents ?? []).map((a) => ({ value: a.name, label: a.name })),
    ...(chosen && !agents?.some((a) => a.name === chosen) ? [{ value: chosen, label: chosen }] : []),
  ];
}

/** The state filter: a chip per state, on or off. */
function StateChips(props: { states: ReadonlySet<string>; toggle: (state: string) => void }) {
  const { states, toggle } = props;
  return (
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
