import { InvalidDefinitionError, PolicyDeniedError } from "./errors.ts";
import type { Json } from "./records.ts";

/**
 * Governance policies (DESIGN §6): every tool, model, domain and spawn call of a run is shown to
 * the runtime's policies before it runs, and each answers allow, deny (→ BLOCKED) or require
 * approval. Nothing here does I/O.
 */

/** The call a policy is asked about, with the run that makes it. */
export interface PolicyCall {
  /** What kind of call: a tool, a model call, a domain read, a child run or a sandbox call. */
  kind: "tool" | "llm" | "domain" | "spawn" | "sandbox";
  /** The agent whose workflow or tool makes the call. */
  agent: string;
  /**
   * What is called: the tool name; the model key for `llm`; `"<domain>.<entity>"` for `domain`;
   * `"<agent>.<workflow>"` of the child for `spawn`; `"<call>:<sandbox name>"` for `sandbox`
   * (`exec:build`, with the command in `args`).
   */
  name: string;
  /** The call's arguments: the tool's args, the model request, the domain params, the child's input. */
  args: Json;
  /** The run making the call. */
  run: {
    id: string;
    agent: string;
    workflow: string;
    input: Json;
    meta: Record<string, Json>;
    parentRunId: string | null;
  };
}

/**
 * What a policy answers: `"allow"`, `{ deny: reason }` (the run ends BLOCKED), or
 * `{ requireApproval }` (the run pauses awaiting an approval that expires after `expiresInMs`;
 * `approvers` limits who may decide, `action` names it — by default
 * `policy:<name>:<kind>:<call name>`).
 */
export type PolicyDecision =
  | "allow"
  | { deny: string }
  | { requireApproval: { approvers?: readonly string[]; expiresInMs: number; action?: string } };

/**
 * A governance policy, registered with `new Runtime({ policies })`.
 *
 * `check` must be synchronous and deterministic — a pure function of the call — because policies
 * are evaluated again when a run is replayed, and a replay must reach the same answer. Read the
 * time, a database or a flag that changes while runs are open and a replay may diverge. Bump
 * `version` whenever the rules change: `name@version` of every policy is recorded on each run
 * (`versions.policy`) and a denial names both.
 *
 * @example
 * const noProdWrites: Policy = {
 *   name: "no_prod_writes",
 *   version: "3",
 *   check: (call) =>
 *     call.kind === "tool" && call.name === "delete_user" ? { deny: "no deletes in production" } : "allow",
 * };
 */
export interface Policy {
  /** Unique among the runtime's policies: a letter, then letters, digits, `_`, `.` or `-` (at most 128). */
  name: string;
  /** The version of the rules, recorded on every run and every denial; never empty. */
  version: string;
  /** Answers for one call; synchronous and deterministic (see above). */
  check(call: PolicyCall): PolicyDecision;
}

/** Every policy allowed the call. */
export interface PolicyAllow {
  kind: "allow";
}

/** A policy denied the call (the first one that did, in registration order). */
export interface PolicyDenial {
  kind: "deny";
  policy: string;
  policyVersion: string;
  reason: string;
}

/** No policy denied and one (the first that did) requires an approval before the call runs. */
export interface PolicyApproval {
  kind: "approval";
  policy: string;
  policyVersion: string;
  /** Who may decide; empty means anyone. */
  approvers: string[];
  expiresInMs: number;
  /** The approval's action: the policy's, or `policy:<name>:<kind>:<call name>`. */
  action: string;
}

/** What all policies together answer for one call: see {@link evaluatePolicies}. */
export type PolicyEvaluation = PolicyAllow | PolicyDenial | PolicyApproval;

const NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,127}$/;

const CONTRACT =
  'policies must return "allow", { deny: reason } or { requireApproval: { expiresInMs, approvers?, action? } } synchronously';

/**
 * Checks the runtime's policies once, when it is built.
 * @throws InvalidDefinitionError naming the policy and how to fix it: a bad name, an empty
 * version (or one holding a comma, which would make the recorded version string ambiguous), two
 * policies with one name, or a `check` that is not a function.
 */
export function validatePolicies(policies: readonly Policy[]): void {
  if (!Array.isArray(policies)) {
    throw new InvalidDefinitionError(
      `policies must be an array of { name, version, check } (got ${describe(policies)})`,
    );
  }
  const seen = new Set<string>();
  policies.forEach((policy, index) => {
    if (policy === null || typeof policy !== "object") {
      throw new InvalidDefinitionError(
        `policies[${index}] is ${describe(policy)}: a policy is an object { name, version, check(call) }`,
      );
    }
    const { name, version } = policy;
    if (typeof name !== "string" || !NAME.test(name)) {
      throw new InvalidDefinitionError(
        `policy name ${describe(name)} (policies[${index}]) is not valid: start with a letter, then use letters, ` +
          `digits, "_", "." or "-", at most 128 characters (e.g. "no_prod_writes")`,
      );
    }
    if (typeof version !== "string" || version.trim() === "") {
      throw new InvalidDefinitionError(
        `policy "${name}" has no version (got ${describe(version)}): give it a non-empty string such as "1", ` +
          `and bump it whenever its rules change — it is recorded on every run and every denial`,
      );
    }
    if (version.includes(",")) {
      throw new InvalidDefinitionError(
        `policy "${name}" has version ${JSON.stringify(version)}: a version may not contain ",", which separates ` +
          `policies in the run's recorded policy versions`,
      );
    }
    if (seen.has(name)) {
      throw new InvalidDefinitionError(
        `two policies are named "${name}": give each policy a unique name (to change a policy, replace it and ` +
          `bump its version)`,
      );
    }
    seen.add(name);
    if (typeof policy.check !== "function") {
      throw new InvalidDefinitionError(
        `policy "${name}" has no check function (got ${describe(policy.check)}): ` +
          `add check(call) returning "allow", { deny } or { requireApproval }`,
      );
    }
  });
}

/**
 * The run's recorded policy versions: `"a@1,b@2"`, sorted by name (code-unit order, the same in
 * every locale); `null` when there are no policies.
 */
export function policyVersions(policies: readonly Policy[]): string | null {
  if (policies.length === 0) return null;
  return policies
    .map((p) => `${p.name}@${p.version}`)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .join(",");
}

/**
 * Asks every policy, in order, about one call. Any deny wins (the first one); else the first
 * approval required; else allow. A policy whose `check` throws, returns a Promise, or returns
 * anything that is not a valid decision (an approval without a positive, finite `expiresInMs`
 * included) counts as a deny whose reason says so: a broken policy never lets a call through.
 */
export function evaluatePolicies(policies: readonly Policy[], call: PolicyCall): PolicyEvaluation {
  let denial: PolicyDenial | undefined;
  let approval: PolicyApproval | undefined;
  for (const policy of policies) {
    const answer = ask(policy, call);
    if (answer.kind === "deny") denial ??= answer;
    else if (answer.kind === "approval") approval ??= answer;
  }
  return denial ?? approval ?? { kind: "allow" };
}

/**
 * The error that ends a run BLOCKED for a denial, e.g.
 * `policy "no_prod_writes"@3 denied tool "delete_user" of agent "ops" (run r1): no deletes`.
 */
export function policyDeniedError(result: PolicyDenial, call: PolicyCall): PolicyDeniedError {
  return new PolicyDeniedError(
    `policy "${result.policy}"@${result.policyVersion} denied ${CALL_WORDS[call.kind]} "${call.name}" of agent ` +
      `"${call.agent}" (run ${call.run.id}): ${result.reason}`,
    { policy: result.policy, policyVersion: result.policyVersion },
  );
}

const CALL_WORDS: Record<PolicyCall["kind"], string> = {
  tool: "tool",
  llm: "model call",
  domain: "domain read",
  spawn: "spawn of",
  sandbox: "sandbox call",
};

function ask(policy: Policy, call: PolicyCall): PolicyEvaluation {
  const deny = (reason: string): PolicyDenial => ({
    kind: "deny",
    policy: policy.name,
    policyVersion: policy.version,
    reason,
  });
  let decision: unknown;
  try {
    decision = policy.check(call);
  } catch (error) {
    return deny(`policy threw: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (isThenable(decision)) {
    // Whatever it settles to is ignored; a rejection must not surface as an unhandled one.
    decision.then(undefined, () => undefined);
    return deny(`policy returned a Promise: ${CONTRACT} (they are evaluated again when a run is replayed)`);
  }
  if (decision === "allow") return { kind: "allow" };
  if (decision !== null && typeof decision === "object") {
    const d = decision as Record<string, unknown>;
    if ("deny" in d && typeof d.deny === "string") return deny(d.deny === "" ? "(no reason given)" : d.deny);
    if ("requireApproval" in d && d.requireApproval !== null && typeof d.requireApproval === "object") {
      return approvalOf(policy, call, d.requireApproval as Record<string, unknown>, deny);
    }
  }
  return deny(`policy returned ${describe(decision)}: ${CONTRACT}`);
}

function approvalOf(
  policy: Policy,
  call: PolicyCall,
  request: Record<string, unknown>,
  deny: (reason: string) => PolicyDenial,
): PolicyEvaluation {
  const { expiresInMs, approvers, action } = request;
  if (typeof expiresInMs !== "number" || !Number.isFinite(expiresInMs) || expiresInMs <= 0) {
    return deny(
      `policy required an approval with expiresInMs ${describe(expiresInMs)}: an approval needs expiresInMs, ` +
        `a finite number of milliseconds > 0`,
    );
  }
  if (approvers !== undefined && !(Array.isArray(approvers) && approvers.every((a) => typeof a === "string"))) {
    return deny(
      `policy required an approval with approvers ${describe(approvers)}: approvers must be an array of strings`,
    );
  }
  if (action !== undefined && typeof action !== "string") {
    return deny(`policy required an approval with action ${describe(action)}: action must be a string`);
  }
  return {
    kind: "approval",
    policy: policy.name,
    policyVersion: policy.version,
    approvers: approvers === undefined ? [] : [...(approvers as string[])],
    expiresInMs,
    action: action === undefined || action === "" ? `policy:${policy.name}:${call.kind}:${call.name}` : action,
  };
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === "object" || typeof value === "function") &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

function describe(value: unknown): string {
  if (value === undefined) return "undefined";
  if (typeof value === "function") return "a function";
  if (typeof value === "number" || typeof value === "bigint" || typeof value === "symbol") return String(value);
  try {
    const text = JSON.stringify(value);
    if (text === undefined) return typeof value;
    return text.length > 80 ? `${text.slice(0, 77)}...` : text;
  } catch {
    return `a ${typeof value}`;
  }
}
