import { createHash } from "node:crypto";
import { ContractAlteredError } from "./errors.ts";

/**
 * The digest of a run contract (DESIGN §5, "Moving a run"): sha-256 over a canonical
 * serialization of everything the contract says but its own `contract` section (the format, the
 * export time and this digest). Besides the whole, it keeps a short digest per field, so that an
 * import of an altered contract is refused naming the field that changed: each section's own
 * fields (`run.state`, `job.owner`), one per item of a list (`run.transitions[4]`,
 * `journal.steps[12]`, `effects[0]`).
 *
 * It detects a change, by accident or by hand; it is not a signature (whoever edits a contract
 * can compute a new digest), so it proves nothing about who made the export.
 */

/** The digest section a contract carries in `contract.digest`. */
export interface ContractDigest {
  algorithm: "sha256";
  /** How the text hashed is made from the contract. */
  canonicalization: typeof CANONICALIZATION;
  /** `sha256:<hex>` of the canonical text of the contract without its `contract` section. */
  value: string;
  /** Per field path, the first 16 hex digits of the sha-256 of its canonical text. */
  fields: Record<string, string>;
}

const CANONICALIZATION =
  "json-sorted-keys/1: JSON without whitespace, object keys in code-unit order, undefined left out";

/**
 * JSON text of `value` with every object's keys in code-unit order and no whitespace; what
 * `JSON.stringify` leaves out (undefined, functions) is left out, so a contract read back from
 * its JSON has the canonical text of the one written.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") {
    const text = JSON.stringify(value);
    return text === undefined ? "null" : text;
  }
  if (Array.isArray(value)) {
    return `[${value.map((item) => (item === undefined || typeof item === "function" ? "null" : canonicalJson(item))).join(",")}]`;
  }
  const record = value as Record<string, unknown>;
  const parts: string[] = [];
  for (const key of Object.keys(record).sort()) {
    const item = record[key];
    if (item === undefined || typeof item === "function") continue;
    parts.push(`${JSON.stringify(key)}:${canonicalJson(item)}`);
  }
  return `{${parts.join(",")}}`;
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** The field paths of a contract body (every section but `contract`) and their values. */
function fieldsOf(body: Record<string, unknown>): Map<string, unknown> {
  const fields = new Map<string, unknown>();
  const each = (path: string, value: unknown, depth: number) => {
    if (Array.isArray(value)) {
      fields.set(`${path}.length`, value.length);
      value.forEach((item, i) => {
        fields.set(`${path}[${i}]`, item);
      });
    } else if (depth === 0 && value !== null && typeof value === "object") {
      for (const [key, item] of Object.entries(value)) {
        if (item !== undefined) each(`${path}.${key}`, item, depth + 1);
      }
    } else {
      fields.set(path, value);
    }
  };
  for (const [section, value] of Object.entries(body)) if (section !== "contract") each(section, value, 0);
  return fields;
}

function bodyOf(contract: object): Record<string, unknown> {
  const { contract: _own, ...body } = contract as Record<string, unknown>;
  return body;
}

/** Computes the digest of a contract (its `contract` section is not part of it). */
export function digestContract(contract: object): ContractDigest {
  const body = bodyOf(contract);
  const fields: Record<string, string> = {};
  for (const [path, value] of fieldsOf(body)) fields[path] = sha256(canonicalJson(value)).slice(0, 16);
  return {
    algorithm: "sha256",
    canonicalization: CANONICALIZATION,
    value: `sha256:${sha256(canonicalJson(body))}`,
    fields,
  };
}

/**
 * Checks a contract against the digest it carries: throws {@link ContractAlteredError} naming the
 * first field that changed (or was added or removed), or saying the digest is missing or was
 * edited itself. Returns the digest's value.
 */
export function verifyContractDigest(contract: object): string {
  const carried = (contract as { contract?: { digest?: Partial<ContractDigest> } }).contract?.digest;
  if (!carried || typeof carried.value !== "string" || typeof carried.fields !== "object" || carried.fields === null) {
    throw new ContractAlteredError(
      "the contract carries no digest (contract.digest): export it again with this version of Cairn, which adds one",
      { field: "contract.digest" },
    );
  }
  const fresh = digestContract(contract);
  const given = carried.fields as Record<string, unknown>;
  for (const [path, digest] of Object.entries(fresh.fields)) {
    if (!(path in given)) {
      throw new ContractAlteredError(`the contract was altered: field ${path} was added after the export`, {
        field: path,
      });
    }
    if (given[path] !== digest) {
      throw new ContractAlteredError(`the contract was altered: field ${path} changed after the export`, {
        field: path,
      });
    }
  }
  for (const path of Object.keys(given)) {
    if (!(path in fresh.fields)) {
      throw new ContractAlteredError(`the contract was altered: field ${path} was removed after the export`, {
        field: path,
      });
    }
  }
  if (carried.value !== fresh.value) {
    throw new ContractAlteredError(
      "the contract's digest (contract.digest.value) does not match its content although every field does: the digest itself was edited",
      { field: "contract.digest.value" },
    );
  }
  return fresh.value;
}
