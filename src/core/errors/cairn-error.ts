/**
 * Errors are data: every error Cairn raises is a {@link CairnError} with a stable `code` from a
 * closed union, a `name` per subclass, and a `retryable` flag that belongs to the class (never
 * found by matching a message).
 */

/** Every code a {@link CairnError} can carry. */
export type CairnErrorCode =
  | "ILLEGAL_TRANSITION"
  | "REPLAY_DIVERGENCE"
  | "INVALID_INPUT"
  | "UNKNOWN_AGENT"
  | "UNKNOWN_WORKFLOW"
  | "UNKNOWN_TOOL"
  | "UNKNOWN_DOMAIN"
  | "UNKNOWN_MODEL"
  | "UNKNOWN_MCP_SERVER"
  | "UNKNOWN_SECRET"
  | "INVALID_DEFINITION"
  | "TOOL_FAILED"
  | "STEP_TIMEOUT"
  | "HEARTBEAT_TIMEOUT"
  | "LEASE_LOST"
  | "RUN_NOT_FOUND"
  | "SCHEDULE_NOT_FOUND"
  | "RUN_NOT_RESUMABLE"
  | "RUN_FAILED"
  | "RUN_BLOCKED"
  | "RUN_INTERRUPTED"
  | "RUN_CANCELLED"
  | "RUN_COMPENSATED"
  | "RUN_NEEDS_RECONCILIATION"
  | "RUN_MOVED"
  | "CONTRACT_ALTERED"
  | "IMPORT_CONFLICT"
  | "WAIT_TIMEOUT"
  | "NOT_SERIALIZABLE"
  | "RUNTIME_CLOSED"
  | "STORAGE"
  | "STORAGE_REJECTED"
  | "WAIT_NOT_FOUND"
  | "WAIT_CLOSED"
  | "RUN_NOT_OPEN"
  | "APPROVAL_DENIED"
  | "APPROVAL_EXPIRED"
  | "APPROVAL_REFUSED"
  | "CANCELLED"
  | "VERSION_MISMATCH"
  | "STEP_LIMIT"
  | "HISTORY_LIMIT"
  | "SIGNAL_INBOX_FULL"
  | "PAYLOAD_TOO_LARGE"
  | "EFFECT_NOT_APPLIED"
  | "EFFECT_REFUSED"
  | "EFFECT_UNRESOLVED"
  | "EFFECT_NOT_FOUND"
  | "COMPENSATION_FAILED"
  | "POLICY_DENIED"
  | "BUDGET_EXCEEDED"
  | "RUN_NOT_COMPLETED"
  | "ALREADY_DECIDED"
  | "MODEL_UNAVAILABLE"
  | "MODEL_REQUEST_REJECTED"
  | "CONTEXT_OVERFLOW"
  | "MAX_TURNS_EXCEEDED"
  | "AGENT_LOOP_STUCK"
  | "MCP_FAILED"
  | "SANDBOX_LOST"
  | "SANDBOX_UNAVAILABLE"
  | "MISSING_PEER_DEPENDENCY";

/** Options every Cairn error accepts. */
export interface CairnErrorOptions {
  cause?: unknown;
}

/** The base class of every error Cairn raises. */
export abstract class CairnError extends Error {
  /** Stable machine-readable code; safe to switch on. */
  abstract readonly code: CairnErrorCode;
  /** Whether retrying the same operation can succeed. A property of the class. */
  static readonly retryable: boolean = false;

  constructor(message: string, options: CairnErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
  }

  /** Whether retrying can succeed; read from the class. */
  get retryable(): boolean {
    return (this.constructor as typeof CairnError).retryable;
  }

  /**
   * `instanceof` that holds across copies of Cairn (two versions in one `node_modules`, a bundle
   * beside a library): an error is an instance of a Cairn error class when it is one of this very
   * class or its prototype chain carries the class's marker, `Symbol.for("cairn.error.<Name>")`, as
   * Temporal's `SymbolBasedInstanceOfError` does. A user's subclass keeps the ordinary check.
   */
  static override [Symbol.hasInstance](this: abstract new (...args: never[]) => unknown, instance: unknown): boolean {
    // biome-ignore lint/complexity/noUselessThisAlias: one name for the class `instanceof` names
    // biome-ignore lint/complexity/noThisInStatic: that class may be a subclass
    const Class = this;
    if (Function.prototype[Symbol.hasInstance].call(Class, instance)) return true;
    if (typeof instance !== "object" || instance === null || !Object.hasOwn(Class, CLASS_MARKER)) return false;
    const marker = (Class as unknown as Record<symbol, symbol>)[CLASS_MARKER] as symbol;
    return (instance as Record<symbol, unknown>)[marker] === true;
  }
}

/** Where each Cairn error class keeps the symbol that marks its instances. */
const CLASS_MARKER = Symbol.for("cairn.error.marker");

/** The shape an error takes in the journal, so a replay can throw the same error again. */
export interface SerializedError {
  name: string;
  message: string;
  code?: string;
  retryable?: boolean;
  stack?: string;
  cause?: SerializedError;
  /** Extra fields of a Cairn error (tool name, attempts, ...). */
  data?: Record<string, unknown>;
}

/**
 * Marks Cairn error classes (their names written out, so a minifier cannot change them): each
 * prototype carries `Symbol.for("cairn.error.<Name>")` for `instanceof` across copies of Cairn.
 */
export function markErrorClasses(classes: Record<string, abstract new (...args: never[]) => CairnError>): void {
  for (const [name, Class] of Object.entries(classes)) {
    const marker = Symbol.for(`cairn.error.${name}`);
    Object.defineProperty(Class, CLASS_MARKER, { value: marker });
    Object.defineProperty(Class.prototype, marker, { value: true });
  }
}

markErrorClasses({ CairnError });
