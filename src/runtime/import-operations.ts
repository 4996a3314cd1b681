import type { ImportRunInput } from "../backend/backend.ts";
import { verifyContractDigest } from "../core/contract-digest.ts";
import type { SerializedError } from "../core/errors.ts";
import { ImportConflictError, InvalidInputError, RunNotOpenError } from "../core/errors.ts";
import type { Actor, Json, RunRecord, WaitRecord } from "../core/records.ts";
import { RUN_CONTRACT_VERSION, type RunContract } from "../core/run-contract.ts";
import type { RunState } from "../core/run-state.ts";
import { type ContractOperationsHost, exportRunContract } from "./contract-operations.ts";

/**
 * Moving a run between stores (DESIGN §5, "Moving a run"): `importRun` recreates a run from its
 * exported contract, `moveRun` exports a run and fences its source copy (MOVED) in one step, so a
 * run is never continued in two places.
 */

/** What `importRun` returns: the run as stored here, and whether this import wrote it. */
export interface ImportResult {
  run: RunRecord;
  /** False when this very contract was imported here before (nothing was written). */
  created: boolean;
}

/** Options of `moveRun`. */
export interface MoveOptions {
  /** Where the run goes, in words or as a URL without credentials: kept in the source's record. */
  to?: string;
  /** Who moves it. @default { kind: "user", id: "local" } */
  by?: Actor | string;
  /**
   * Called with the contract before the run is fenced: store it (a file, a request body). When it
   * throws, the run is not fenced and stays where it is.
   */
  keep?: (contract: RunContract) => Promise<void> | void;
}

/** The states a run can move from: no worker holds it, and it can be continued elsewhere. */
const MOVABLE: ReadonlySet<RunState> = new Set(["PENDING", "PAUSED", "NEEDS_RECONCILIATION", "INTERRUPTED", "FAILED"]);

/**
 * Recreates a run from its exported contract on this runtime's backend (one transaction), after
 * checking its digest (`ContractAlteredError` naming the field that changed). The same contract
 * imported again returns the run (`created: false`); another run under its id or key is refused
 * (`ImportConflictError`).
 */
export async function importRunContract(host: ContractOperationsHost, contract: unknown): Promise<ImportResult> {
  const c = checkShape(contract);
  const digest = verifyContractDigest(c);
  const seen = await sameImport(host, c.run.id, digest);
  if (seen) return { run: seen, created: false };
  checkLineage(c);
  const imported: Json = { digest, from: c.checkpoint.store, exportedAt: c.contract.exportedAt, at: iso(host.now()) };
  try {
    const result = await host.backend.importRun(recordsOf(c, imported));
    if (result.created) return result;
  } catch (error) {
    // Two imports of one contract at once: the other one wrote it.
    const other = await sameImport(host, c.run.id, digest);
    if (other) return { run: other, created: false };
    throw error;
  }
  const again = await sameImport(host, c.run.id, digest);
  if (again) return { run: again, created: false };
  throw new ImportConflictError(
    `run ${c.run.id} cannot be imported: a run with this id exists here and is not this export (digest ${digest}); nothing was written`,
  );
}

/** The run under `runId` when it was imported from the contract with this digest. */
async function sameImport(host: ContractOperationsHost, runId: string, digest: string): Promise<RunRecord | undefined> {
  const run = await host.backend.getRun(runId);
  const imported = run?.meta.imported;
  const same =
    imported !== null && typeof imported === "object" && !Array.isArray(imported) && imported.digest === digest;
  return same ? run : undefined;
}

/**
 * Exports a run and ends its copy here MOVED, in that order, fenced: the MOVED transition is
 * written only while the run is as the contract saw it (same state, same last transition, no
 * live lease), so what the contract holds is all the run did here. Returns the contract.
 */
export async function moveRunOut(
  host: ContractOperationsHost,
  runId: string,
  options: MoveOptions = {},
): Promise<RunContract> {
  const run = await host.getRun(runId);
  if (!MOVABLE.has(run.state)) {
    throw new RunNotOpenError(
      `run ${runId} is ${run.state}: a run moves when no worker holds it (PENDING, PAUSED, NEEDS_RECONCILIATION, INTERRUPTED or FAILED)${run.state === "MOVED" ? "; it moved already" : "; wait until it pauses, or export it without --move to copy it"}`,
    );
  }
  if (run.parentRunId !== null) {
    throw new RunNotOpenError(`run ${runId} is a child of run ${run.parentRunId}: only a top-level run moves`);
  }
  const contract = await exportRunContract(host, runId);
  const openChildren = contract.waits.filter((w) => w.kind === "child" && w.status === "open");
  if (openChildren.length > 0) {
    throw new RunNotOpenError(
      `run ${runId} waits for its child run ${openChildren[0]?.name}: a run moves without children in flight`,
    );
  }
  await options.keep?.(contract);
  const by = actorOf(options.by);
  const to = options.to ?? "another store";
  const digest = contract.contract.digest.value;
  const now = host.now();
  const error: SerializedError = {
    name: "RunMovedError",
    message: `run ${runId} moved to ${to} (contract ${digest}); continue it there`,
    code: "RUN_MOVED",
    retryable: false,
    data: { to, digest, movedAt: iso(now) },
  };
  await host.backend.transition({
    runId,
    from: run.state,
    to: "MOVED",
    actor: by,
    reason: `moved to ${to} by ${by.id}: contract ${digest}`,
    versions: run.versions,
    at: now,
    fence: { unowned: true, now },
    expectLastTransitionId: run.lastTransitionId,
    patch: { error, releaseLease: true },
  });
  return contract;
}

function checkShape(contract: unknown): RunContract {
  const c = contract as Partial<RunContract> | null;
  if (c === null || typeof c !== "object" || Array.isArray(c)) {
    throw new InvalidInputError("a run contract is a JSON object, as `cairn export <runId>` writes it");
  }
  if (c.contract?.version !== RUN_CONTRACT_VERSION) {
    throw new InvalidInputError(
      `not a run contract of format ${RUN_CONTRACT_VERSION} (contract.version is ${JSON.stringify(c.contract?.version ?? null)}); export the run with \`cairn export <runId>\``,
    );
  }
  for (const section of [
    "run",
    "checkpoint",
    "waits",
    "signals",
    "recovery",
    "completion",
    "usage",
    "journal",
  ] as const) {
    if (c[section] === undefined) throw new InvalidInputError(`the run contract has no \`${section}\` section`);
  }
  return c as RunContract;
}

function checkLineage(c: RunContract): void {
  if (c.run.parentRunId !== null) {
    throw new ImportConflictError(
      `run ${c.run.id} is a child of run ${c.run.parentRunId}: only a top-level run is imported`,
    );
  }
  const child = c.waits.find((w) => w.kind === "child" && w.status === "open");
  if (child) {
    throw new ImportConflictError(
      `run ${c.run.id} waits for its child run ${child.name}, which the contract does not carry`,
    );
  }
}

/** The records a contract describes, as `importRun` writes them (`imported` goes to `meta.imported`). */
export function recordsOf(c: RunContract, imported: Json): ImportRunInput {
  const id = c.run.id;
  const run: RunRecord = {
    id,
    agent: c.run.agent,
    workflow: c.run.workflow,
    key: c.run.key,
    state: c.run.state,
    pausedReason: c.run.pausedReason,
    input: c.run.input,
    output: c.run.state === "COMPLETED" ? c.completion.output : undefined,
    error: c.completion.error ?? undefined,
    epoch: c.run.epoch,
    leaseOwner: null,
    leaseExpiresAt: null,
    recoveries: c.recovery.recoveriesUsed,
    lastTransitionId: c.run.transitions.at(-1)?.id ?? 0,
    versions: c.run.versions,
    meta: { ...c.run.meta, imported },
    parentRunId: null,
    parentClosePolicy: c.run.parentClosePolicy,
    stopRequest: c.recovery.stopRequest ? { ...c.recovery.stopRequest, at: ms(c.recovery.stopRequest.at) } : undefined,
    continuedFrom: c.run.continuedFrom,
    continuedTo: c.run.continuedTo,
    usage: c.usage.source === "run" ? usageOf(c) : undefined,
    acceptance: c.completion.acceptance
      ? { ...c.completion.acceptance, at: ms(c.completion.acceptance.at) }
      : undefined,
    createdAt: ms(c.run.createdAt),
    updatedAt: ms(c.run.updatedAt),
  };
  return {
    run,
    transitions: c.run.transitions.map((t) => ({
      runId: id,
      id: t.id,
      at: ms(t.at),
      actor: t.actor,
      from: t.from,
      to: t.to,
      pausedReason: t.pausedReason,
      reason: t.reason,
      versions: t.versions,
    })),
    steps: c.journal.steps,
    waits: c.waits.map((w): WaitRecord => {
      const r = w.resolution;
      return {
        runId: id,
        id: w.id,
        seq: w.seq,
        kind: w.kind,
        name: w.name,
        status: w.status,
        details: w.details,
        dueAt: w.dueAt === null ? null : ms(w.dueAt),
        createdAt: ms(w.createdAt),
        resolution: r
          ? {
              outcome: r.outcome as NonNullable<WaitRecord["resolution"]>["outcome"],
              // The outcomes that carry a value always have one (a signal's payload may be null).
              ...(CARRY_VALUE.has(r.outcome) || r.value !== null ? { value: r.value } : {}),
              ...(r.by === null ? {} : { by: r.by }),
              ...(r.messageId === null ? {} : { messageId: r.messageId }),
              ...(r.note === null ? {} : { note: r.note }),
              at: ms(r.at),
            }
          : undefined,
      };
    }),
    signals: c.signals.map((s) => ({ runId: id, ...s, receivedAt: ms(s.receivedAt) })),
  };
}

/** Wait outcomes whose resolution always holds a value (the contract writes a missing one as null). */
const CARRY_VALUE: ReadonlySet<string> = new Set(["signalled", "answered", "child_ended"]);

function usageOf(c: RunContract): RunRecord["usage"] {
  const { source: _source, ...usage } = c.usage;
  return usage;
}

function actorOf(by: Actor | string | undefined): Actor {
  if (by === undefined) return { kind: "user", id: "local" };
  return typeof by === "string" ? { kind: "user", id: by } : by;
}

function ms(at: string): number {
  const value = Date.parse(at);
  if (Number.isNaN(value))
    throw new InvalidInputError(`the run contract holds a time that is not ISO 8601: ${JSON.stringify(at)}`);
  return value;
}

function iso(at: number): string {
  return new Date(at).toISOString();
}
