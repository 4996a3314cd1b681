import { CairnError, type CairnErrorOptions, markErrorClasses } from "./cairn-error.ts";

/* Errors about definitions, input, replay and storage. */

/** A state change that the transition table does not allow. A bug, never retried. */
export class IllegalTransitionError extends CairnError {
  readonly code = "ILLEGAL_TRANSITION" as const;
  readonly from: string;
  readonly to: string;
  constructor(message: string, pair: { from: string; to: string }, options?: CairnErrorOptions) {
    super(message, options);
    this.from = pair.from;
    this.to = pair.to;
  }
}

/** The code of a replayed workflow called a different step than its history holds. */
export class ReplayDivergenceError extends CairnError {
  readonly code = "REPLAY_DIVERGENCE" as const;
  readonly seq: number;
  /** The step the history holds at `seq` (`kind "name"`), or null when it holds none. */
  readonly history: string | null;
  /** The step the code asked for at `seq`, or null when the code finished before it. */
  readonly called: string | null;
  constructor(
    message: string,
    seq: number,
    options?: CairnErrorOptions & { history?: string | null; called?: string | null },
  ) {
    super(message, options);
    this.seq = seq;
    this.history = options?.history ?? null;
    this.called = options?.called ?? null;
  }
}

/** Input (tool arguments, workflow input) failed its schema. */
export class InvalidInputError extends CairnError {
  readonly code = "INVALID_INPUT" as const;
  /** The validation issues, as the schema library reported them. */
  readonly issues: readonly { path: readonly PropertyKey[]; message: string }[];
  constructor(
    message: string,
    issues: readonly { path: readonly PropertyKey[]; message: string }[] = [],
    options?: CairnErrorOptions,
  ) {
    super(message, options);
    this.issues = issues;
  }
}

/** An agent, workflow, tool, domain, model, MCP server or secret name that is not registered. */
export class UnknownNameError extends CairnError {
  readonly code:
    | "UNKNOWN_AGENT"
    | "UNKNOWN_WORKFLOW"
    | "UNKNOWN_TOOL"
    | "UNKNOWN_DOMAIN"
    | "UNKNOWN_MODEL"
    | "UNKNOWN_MCP_SERVER"
    | "UNKNOWN_SECRET";
  constructor(
    code:
      | "UNKNOWN_AGENT"
      | "UNKNOWN_WORKFLOW"
      | "UNKNOWN_TOOL"
      | "UNKNOWN_DOMAIN"
      | "UNKNOWN_MODEL"
      | "UNKNOWN_MCP_SERVER"
      | "UNKNOWN_SECRET",
    message: string,
    options?: CairnErrorOptions,
  ) {
    super(message, options);
    this.code = code;
  }
}

/** An agent, tool or runtime definition that cannot work as written. */
export class InvalidDefinitionError extends CairnError {
  readonly code = "INVALID_DEFINITION" as const;
}

/** A value handed to the journal is not JSON. */
export class NotSerializableError extends CairnError {
  readonly code = "NOT_SERIALIZABLE" as const;
}

/** The runtime was closed or is shutting down. */
export class RuntimeClosedError extends CairnError {
  readonly code = "RUNTIME_CLOSED" as const;
}

/** The storage backend failed in a way that is not about the run (disk, driver, schema). */
export class StorageError extends CairnError {
  static override readonly retryable = true;
  readonly code = "STORAGE" as const;
}

/**
 * The store refused a value it was given (bad data such as a character it cannot hold, or a
 * constraint): writing it again fails the same way, so it is never retried and never taken for a
 * lost worker. A run whose write is refused so ends FAILED with this error; a client call gets it
 * with nothing written. `field` names the column or value when the store said which.
 */
export class StorageRejectedError extends CairnError {
  readonly code = "STORAGE_REJECTED" as const;
  readonly field: string | undefined;
  constructor(message: string, details: { field?: string | undefined } = {}, options?: CairnErrorOptions) {
    super(message, options);
    this.field = details.field;
  }
}

/**
 * A feature needs an optional peer dependency that is not installed (`pg` for `cairn/postgres`,
 * an AI SDK provider for `cairn/ai-sdk`, the MCP SDK for the runtime's `mcp` servers). The
 * message names the package and the command that installs it; `packageName` and `feature` say
 * the same as data. Installing does not happen by retrying, so it is never retried.
 */
export class MissingPeerDependencyError extends CairnError {
  readonly code = "MISSING_PEER_DEPENDENCY" as const;
  /** The npm package to install, e.g. "pg". */
  readonly packageName: string;
  /** What needs it, e.g. "cairn/postgres". */
  readonly feature: string;
  constructor(message: string, details: { packageName: string; feature: string }, options?: CairnErrorOptions) {
    super(message, options);
    this.packageName = details.packageName;
    this.feature = details.feature;
  }
}

markErrorClasses({
  MissingPeerDependencyError,
  IllegalTransitionError,
  ReplayDivergenceError,
  InvalidInputError,
  UnknownNameError,
  InvalidDefinitionError,
  NotSerializableError,
  RuntimeClosedError,
  StorageError,
  StorageRejectedError,
});
