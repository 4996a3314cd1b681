import { posix } from "node:path";
import { InvalidInputError } from "../core/errors.ts";
import type { SandboxLimits, SandboxMount, SandboxSpec } from "../core/sandbox.ts";
import { checkText } from "../core/text.ts";

/** A spec with its defaults filled in and checked: what a sandbox's metadata keeps. */
export interface NormalSpec {
  network: boolean;
  env: Record<string, string>;
  limits: SandboxLimits;
  mounts: Required<SandboxMount>[];
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const LIMITS = ["cpuSeconds", "memoryBytes", "processes", "fileSizeBytes"] as const;
/** Paths a mount may not cover: the sandbox's own file systems. */
const RESERVED = ["/proc", "/dev", "/workspace"];

function refuse(message: string, path: PropertyKey[]): never {
  throw new InvalidInputError(`${message}; no sandbox was created`, [{ path, message }]);
}

/** Checks a sandbox label: well-formed text of at most 512 characters. */
export function checkLabel(label: unknown): string {
  return checkText(label, "sandbox label", { maxLength: 512 });
}

/** Checks an environment (names of letters, digits and `_`; values without NUL). */
export function checkEnv(env: unknown, field: string): Record<string, string> {
  if (env === undefined) return {};
  if (typeof env !== "object" || env === null || Array.isArray(env)) {
    throw new InvalidInputError(`${field} must be an object of strings`, [{ path: [field], message: "not an object" }]);
  }
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (!ENV_NAME.test(name)) {
      throw new InvalidInputError(
        `${field}: "${name}" is not a variable name (letters, digits and _, not first a digit)`,
        [{ path: [field, name], message: "bad name" }],
      );
    }
    out[name] = checkText(value, `${field}.${name}`, { allowEmpty: true, maxLength: 131_072 });
  }
  return out;
}

function checkLimits(limits: unknown): SandboxLimits {
  if (limits === undefined) return {};
  if (typeof limits !== "object" || limits === null) refuse("spec.limits must be an object", ["limits"]);
  const out: SandboxLimits = {};
  for (const [name, value] of Object.entries(limits)) {
    if (!(LIMITS as readonly string[]).includes(name)) {
      refuse(`spec.limits.${name} is not a limit (known: ${LIMITS.join(", ")})`, ["limits", name]);
    }
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || (value as number) <= 0) {
      refuse(`spec.limits.${name} must be a positive whole number (got ${String(value)})`, ["limits", name]);
    }
    out[name as (typeof LIMITS)[number]] = value as number;
  }
  return out;
}

function checkAbsolute(value: unknown, field: string): string {
  const path = checkText(value, field, { maxLength: 4096 });
  if (!posix.isAbsolute(path) || posix.normalize(path) !== path || (path.length > 1 && path.endsWith("/"))) {
    refuse(`${field} must be an absolute, normalized path (got "${path}")`, [field]);
  }
  return path;
}

function checkMounts(mounts: unknown): Required<SandboxMount>[] {
  if (mounts === undefined) return [];
  if (!Array.isArray(mounts)) refuse("spec.mounts must be an array", ["mounts"]);
  return mounts.map((mount: SandboxMount, i) => {
    const host = checkAbsolute(mount?.host, `spec.mounts[${i}].host`);
    const path = checkAbsolute(mount?.path, `spec.mounts[${i}].path`);
    if (path === "/" || RESERVED.some((r) => path === r || path.startsWith(`${r}/`))) {
      refuse(`spec.mounts[${i}].path "${path}" covers the sandbox's own ${path === "/" ? "root" : path}`, [
        "mounts",
        i,
      ]);
    }
    return { host, path, readOnly: mount.readOnly ?? true };
  });
}

/** The spec with its defaults, checked; throws {@link InvalidInputError} naming what is wrong. */
export function normalizeSpec(spec: SandboxSpec | undefined): NormalSpec {
  const s = spec ?? {};
  if (s.network !== undefined && typeof s.network !== "boolean") refuse("spec.network must be a boolean", ["network"]);
  return {
    network: s.network ?? false,
    env: checkEnv(s.env, "spec.env"),
    limits: checkLimits(s.limits),
    mounts: checkMounts(s.mounts),
  };
}

/**
 * What differs between two specs of one label, env aside (the latest create's env is kept): a
 * sandbox is not silently handed out with another network, other limits or other mounts.
 */
export function specDifference(a: NormalSpec, b: NormalSpec): string[] {
  const fields = ["network", "limits", "mounts"] as const;
  return fields.filter((f) => JSON.stringify(sorted(a[f])) !== JSON.stringify(sorted(b[f])));
}

function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([x], [y]) => (x < y ? -1 : 1))
      .map(([k, v]) => [k, sorted(v)]),
  );
}
