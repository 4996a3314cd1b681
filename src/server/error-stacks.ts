import type { Principal } from "./auth.ts";

/**
 * Who sees the stack traces of errors. A stored error (a run's, a step's, an attempt's, their
 * causes, and the same inside an export or a child's ending) keeps its `stack`: the operator who
 * debugs a failure from the database or the CLI needs it, and the database is already the trust
 * boundary (whoever reads it reads the inputs and outputs too). Over HTTP, stacks name the
 * server's files, dependencies and layout, which a viewer has no need of: only an admin gets them.
 */

/** Whether `principal` is sent stack traces. */
export function seesStacks(principal: Principal): boolean {
  return principal.roles.includes("admin");
}

/**
 * `value` without the `stack` of every error in it: every object with a string `name` and
 * `message` and its own `stack` (a serialized error, wherever it sits). Objects and arrays are
 * copied only where something was removed; a `__proto__` key stays data.
 */
export function withoutStacks<T>(value: T): T {
  return strip(value) as T;
}

function strip(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item = strip(value[i]);
      if (item !== value[i]) {
        out ??= value.slice();
        out[i] = item;
      }
    }
    return out ?? value;
  }
  const record = value as Record<string, unknown>;
  const error = typeof record.name === "string" && typeof record.message === "string" && Object.hasOwn(record, "stack");
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(record)) {
    if (error && key === "stack") {
      out ??= { ...record };
      delete out.stack;
      continue;
    }
    const item = strip(record[key]);
    if (item !== record[key]) {
      out ??= { ...record };
      Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true });
    }
  }
  return out ?? value;
}
