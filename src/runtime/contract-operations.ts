import type { RuntimeBackend } from "../backend/backend.ts";
import type { AgentDefinition } from "../core/agent-definition.ts";
import { InvalidInputError } from "../core/errors.ts";
import type { Actor, RunRecord, StepRecord } from "../core/records.ts";
import type { RunContract } from "../core/run-contract.ts";
import { buildCostReport, type CostFilter, type CostReport, runsNeedingSteps } from "./cost-report.ts";
import { buildRunContract } from "./run-contract-builder.ts";
import type { ContractSettings } from "./run-contract-sections.ts";
import type { RunHistory } from "./runtime-options.ts";

/**
 * The client operations on a run's record as a whole — export it as a run contract, accept or
 * reject its outcome — and the cost report over all runs. Shared by the runtime (and, through it,
 * the CLI and the server).
 */

/** What the operations need from the runtime. */
export interface ContractOperationsHost {
  backend: RuntimeBackend;
  now(): number;
  /** The run as stored; throws `RunNotFoundError` for an unknown id. */
  getRun(runId: string): Promise<RunRecord>;
  /** The agent's definition when this runtime has its code, for its tools' retry policies. */
  agent(name: string): AgentDefinition | undefined;
  /** The runtime's settings a contract states (grace, recoveries, lease, timeouts). */
  settings?(): ContractSettings;
}

/** Options of `accept` and `reject`. */
export interface VerdictOptions {
  /** Who gives the verdict: a name (recorded as a user) or an actor. @default { kind: "user", id: "local" } */
  by?: Actor | string;
  /** Why: kept with the verdict. @default "" */
  note?: string;
}

const LOCAL: Actor = { kind: "user", id: "local" };

/** Runs read per page when an operation reads every run. */
const PAGE = 500;

/** The run contract of a run (see `run-contract.ts`); `RunNotFoundError` for an unknown id. */
export async function exportRunContract(host: ContractOperationsHost, runId: string): Promise<RunContract> {
  const run = await host.getRun(runId);
  const [transitions, steps, waits, signals, children] = await Promise.all([
    host.backend.listTransitions(runId),
    host.backend.loadSteps(runId),
    host.backend.loadWaits(runId),
    host.backend.listSignals(runId),
    allRuns(host.backend, { parentRunId: runId }),
  ]);
  return buildRunContract({
    run,
    transitions,
    steps,
    waits,
    signals,
    children,
    store: storeOf(host.backend),
    agent: host.agent(run.agent),
    exportedAt: host.now(),
    settings: host.settings?.(),
  });
}

/**
 * Records an operator's verdict on a COMPLETED run (see `RuntimeBackend.recordAcceptance`):
 * `RunNotCompletedError` for a run in any other state, `AlreadyDecidedError` for a run that has one.
 */
export async function recordVerdict(
  host: ContractOperationsHost,
  runId: string,
  decision: "accepted" | "rejected",
  options: VerdictOptions = {},
): Promise<RunRecord> {
  const by = actorOf(options.by, decision);
  if (options.note !== undefined && typeof options.note !== "string") {
    throw new InvalidInputError(`the note of a verdict on run ${runId} must be text`);
  }
  await host.getRun(runId);
  return host.backend.recordAcceptance(runId, { decision, by, note: options.note ?? "", at: host.now() });
}

/** The cost report over every run (or those of one agent / workflow): see `cost-report.ts`. */
export async function reportCosts(host: ContractOperationsHost, filter: CostFilter = {}): Promise<CostReport> {
  // Every run, not only the filtered ones: whether a run has children decides how it is counted.
  const runs = await allRuns(host.backend, {});
  const inScope = new Set(
    runs
      .filter(
        (r) =>
          (filter.agent === undefined || r.agent === filter.agent) &&
          (filter.workflow === undefined || r.workflow === filter.workflow),
      )
      .map((r) => r.id),
  );
  const steps = new Map<string, StepRecord[]>();
  for (const id of runsNeedingSteps(runs)) {
    if (inScope.has(id)) steps.set(id, await host.backend.loadSteps(id));
  }
  return buildCostReport({ runs, steps }, filter);
}

/** Every run the filter matches, page by page (a run created meanwhile may shift a page: ids de-duplicate). */
async function allRuns(backend: RuntimeBackend, filter: { parentRunId?: string }): Promise<RunRecord[]> {
  const byId = new Map<string, RunRecord>();
  for (let offset = 0; ; offset += PAGE) {
    const page = await backend.listRuns({ ...filter, limit: PAGE, offset });
    for (const run of page) if (!byId.has(run.id)) byId.set(run.id, run);
    if (page.length < PAGE) break;
  }
  return [...byId.values()];
}

/** The backend's name and where it keeps runs (a SQLite file, a PostgreSQL schema) when it says. */
function storeOf(backend: RuntimeBackend): { backend: string; location?: string } {
  const { path, schema } = backend as { path?: unknown; schema?: unknown };
  if (typeof path === "string") return { backend: backend.name, location: path };
  if (typeof schema === "string") return { backend: backend.name, location: `schema ${schema}` };
  return { backend: backend.name };
}

function actorOf(by: Actor | string | undefined, decision: string): Actor {
  if (by === undefined) return LOCAL;
  const actor = typeof by === "string" ? { kind: "user" as const, id: by } : by;
  if (!actor.id) {
    throw new InvalidInputError(
      `a verdict (${decision}) needs the identity of who gives it ({ by: "alice" }), not an empty one; nothing was recorded`,
    );
  }
  return actor;
}

/** The run with its transitions, steps and waits (`runtime.history`). */
export async function readHistory(host: ContractOperationsHost, runId: string): Promise<RunHistory> {
  const run = await host.getRun(runId);
  const [transitions, steps, waits] = await Promise.all([
    host.backend.listTransitions(runId),
    host.backend.loadSteps(runId),
    host.backend.loadWaits(runId),
  ]);
  return { run, transitions, steps, waits };
}
