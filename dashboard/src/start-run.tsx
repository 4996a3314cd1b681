import { useState } from "preact/hooks";
import type { Json } from "../../src/api/http-api.ts";
import { type AgentInfo, api } from "./api.ts";
import { ErrorText, useAction } from "./components.tsx";
import { navigate, runHref } from "./router.ts";
import { SchemaForm } from "./schema-form.tsx";
import { useCan } from "./session.ts";

/**
 * The "start a run" form: agent, workflow, the input — a form built from the workflow's input
 * schema (`/api/agents` serves it as JSON Schema) or, without one or on request, a JSON editor —
 * and an optional key. Not shown to a role that may not start runs.
 */
export function StartRunForm(props: { agents: AgentInfo[] | null }) {
  const agents = props.agents ?? [];
  const [agent, setAgent] = useState("");
  const [workflow, setWorkflow] = useState("");
  const [input, setInput] = useState("{}");
  const [key, setKey] = useState("");
  const [asJson, setAsJson] = useState(false);
  const action = useAction();
  const allowed = useCan("operate");

  const chosenAgent = agents.find((a) => a.name === agent) ?? (agents.length === 1 ? agents[0] : undefined);
  const workflows = chosenAgent?.workflows ?? [];
  const chosenWorkflow = workflows.includes(workflow) ? workflow : (workflows[0] ?? "");
  const schema = chosenAgent?.inputs?.[chosenWorkflow];
  const formed = schema !== undefined && !asJson;

  if (!allowed) return null;

  const start = async (value: Json) => {
    if (!chosenAgent || !chosenWorkflow) return;
    await action.run(async () => {
      const result = await api.startRun({
        agent: chosenAgent.name,
        workflow: chosenWorkflow,
        input: value,
        ...(key.trim() ? { key: key.trim() } : {}),
      });
      navigate(runHref(result.run.id));
    });
  };

  return (
    <div class="start-run card" data-testid="start-run-form">
      <h2>Start a run</h2>
      <div class="row">
        <AgentSelect
          agents={props.agents}
          chosen={chosenAgent}
          onChange={(name) => {
            setAgent(name);
            setWorkflow("");
          }}
        />
        <WorkflowSelect workflows={workflows} chosen={chosenWorkflow} disabled={!chosenAgent} onChange={setWorkflow} />
        <KeyInput value={key} onInput={setKey} />
        {schema !== undefined && <AsJsonToggle on={asJson} set={setAsJson} />}
      </div>
      {chosenAgent?.description && <p class="muted small desc">{chosenAgent.description}</p>}
      {formed ? (
        <SchemaForm
          key={`${chosenAgent?.name}/${chosenWorkflow}`}
          idPrefix="start"
          schema={schema}
          busy={action.busy}
          testids="start"
          submitLabel="Start run"
          onSubmit={start}
        />
      ) : (
        <JsonStart
          input={input}
          setInput={setInput}
          busy={action.busy}
          ready={chosenAgent !== undefined && chosenWorkflow !== ""}
          onStart={start}
        />
      )}
      <ErrorText error={action.error} testid="start-error" />
    </div>
  );
}

/** The input as a JSON editor, for a workflow without a schema (or on request). */
function JsonStart(props: {
  input: string;
  setInput: (input: string) => void;
  busy: boolean;
  ready: boolean;
  onStart: (value: Json) => void;
}) {
  const parsed = parseInput(props.input);
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        if (parsed.ok) props.onStart(parsed.value);
      }}
    >
      <div class="row">
        <InputBox value={props.input} valid={parsed.ok} onInput={props.setInput} />
        <button
          type="submit"
          class="primary start-submit"
          disabled={props.busy || !props.ready || !parsed.ok}
          data-testid="start-submit"
        >
          {props.busy ? "Starting…" : "Start run"}
        </button>
      </div>
      {!parsed.ok && <div class="error-text">Input is not JSON: {parsed.message}</div>}
    </form>
  );
}

/** "edit as JSON": the JSON editor instead of the form made from the schema. */
function AsJsonToggle(props: { on: boolean; set: (on: boolean) => void }) {
  return (
    <label class="inline small">
      <input
        type="checkbox"
        checked={props.on}
        onChange={(e) => props.set(e.currentTarget.checked)}
        data-testid="start-as-json"
      />{" "}
      edit as JSON
    </label>
  );
}

/** The optional idempotency key. */
function KeyInput(props: { value: string; onInput: (value: string) => void }) {
  return (
    <label>
      Key (optional)
      <input
        name="key"
        value={props.value}
        onInput={(e) => props.onInput(e.currentTarget.value)}
        placeholder="idempotency key"
        data-testid="start-key"
      />
    </label>
  );
}

/** The input as typed: JSON (empty is null), or why it is not. */
function parseInput(input: string): { ok: true; value: Json } | { ok: false; message: string } {
  try {
    return { ok: true, value: (input.trim() === "" ? null : JSON.parse(input)) as Json };
  } catch (e) {
    return { ok: false, message: (e as Error).message };
  }
}

function AgentSelect(props: {
  agents: AgentInfo[] | null;
  chosen: AgentInfo | undefined;
  onChange: (name: string) => void;
}) {
  const agents = props.agents ?? [];
  const { chosen } = props;
  return (
    <label>
      Agent
      <select
        name="agent"
        value={chosen?.name ?? ""}
        onChange={(e) => props.onChange(e.currentTarget.value)}
        data-testid="start-agent"
      >
        {agents.length === 0 && <option value="">{props.agents === null ? "loading…" : "no agents"}</option>}
        {agents.length > 1 && !chosen && <option value="">choose…</option>}
        {agents.map((a) => (
          <option key={a.name} value={a.name} title={a.description}>
            {a.name}
          </option>
        ))}
      </select>
    </label>
  );
}

function WorkflowSelect(props: {
  workflows: string[];
  chosen: string;
  disabled: boolean;
  onChange: (workflow: string) => void;
}) {
  return (
    <label>
      Workflow
      <select
        name="workflow"
        value={props.chosen}
        onChange={(e) => props.onChange(e.currentTarget.value)}
        disabled={props.disabled}
        data-testid="start-workflow"
      >
        {props.workflows.map((w) => (
          <option key={w} value={w}>
            {w}
          </option>
        ))}
      </select>
    </label>
  );
}

/** The run's input, as JSON (marked when it does not parse). */
function InputBox(props: { value: string; valid: boolean; onInput: (value: string) => void }) {
  return (
    <label class="grow">
      Input (JSON)
      <textarea
        name="input"
        rows={3}
        spellcheck={false}
        class={`mono${props.valid ? "" : " invalid"}`}
        value={props.value}
        onInput={(e) => props.onInput(e.currentTarget.value)}
        data-testid="start-input"
      />
    </label>
  );
}
