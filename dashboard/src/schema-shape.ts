import type { Json } from "../../src/api/http-api.ts";

/**
 * What a question's JSON Schema (as `z.toJSONSchema` writes it) asks for, as the form needs it:
 * the kind of input of each field, the inputs' initial values and the answer they make.
 */

export type Schema = { [key: string]: Json };

export function asSchema(value: Json | undefined): Schema | null {
  return value && typeof value === "object" && !Array.isArray(value) ? value : null;
}

/** What kind of input a (sub)schema gets. */
export type Field =
  | { kind: "string"; format?: string; multiline: boolean }
  | { kind: "number"; integer: boolean }
  | { kind: "boolean" }
  | { kind: "enum"; options: Json[] }
  | { kind: "const"; value: Json }
  | { kind: "object"; properties: [string, Schema][]; required: Set<string> }
  | { kind: "json" };

export interface Shape {
  field: Field;
  nullable: boolean;
  schema: Schema;
}

/** The shape of a schema, after unwrapping `anyOf: [X, {type: "null"}]` and `type: [X, "null"]`. */
export function shapeOf(schema: Schema): Shape {
  let s = schema;
  let nullable = false;
  const union = (s.anyOf ?? s.oneOf) as Json[] | undefined;
  if (Array.isArray(union)) {
    const branches = union.map(asSchema).filter((b): b is Schema => b !== null);
    const nonNull = branches.filter((b) => b.type !== "null");
    if (nonNull.length < branches.length) nullable = true;
    if (nonNull.length === 1 && nonNull[0])
      s = { ...nonNull[0], description: s.description ?? nonNull[0].description ?? null };
    else if (nonNull.every((b) => "const" in b)) {
      return { field: { kind: "enum", options: nonNull.map((b) => b.const as Json) }, nullable, schema: s };
    } else return { field: { kind: "json" }, nullable, schema: s };
  }
  let type = s.type;
  if (Array.isArray(type)) {
    const types = type.filter((t) => t !== "null");
    if (types.length < type.length) nullable = true;
    type = types.length === 1 ? (types[0] ?? null) : null;
  }
  if (Array.isArray(s.enum)) return { field: { kind: "enum", options: s.enum }, nullable, schema: s };
  if ("const" in s) return { field: { kind: "const", value: s.const as Json }, nullable, schema: s };
  switch (type) {
    case "string": {
      const max = typeof s.maxLength === "number" ? s.maxLength : undefined;
      const format = typeof s.format === "string" ? s.format : undefined;
      return {
        field: { kind: "string", multiline: max !== undefined && max > 200, ...(format ? { format } : {}) },
        nullable,
        schema: s,
      };
    }
    case "number":
    case "integer":
      return { field: { kind: "number", integer: type === "integer" }, nullable, schema: s };
    case "boolean":
      return { field: { kind: "boolean" }, nullable, schema: s };
    case "object": {
      const props = asSchema(s.properties ?? null);
      if (!props) return { field: { kind: "json" }, nullable, schema: s };
      const properties = Object.entries(props)
        .map(([name, sub]) => [name, asSchema(sub)] as const)
        .filter((entry): entry is [string, Schema] => entry[1] !== null);
      const required = new Set(Array.isArray(s.required) ? s.required.filter((r) => typeof r === "string") : []);
      return { field: { kind: "object", properties, required }, nullable, schema: s };
    }
    default:
      return { field: { kind: "json" }, nullable, schema: s };
  }
}

/** Input values by path: strings for text, numbers and JSON boxes, booleans for checkboxes. */
export type Values = Record<string, string | boolean>;

/** The initial value of each input of `shape` (its defaults), by path, into `into`. */
export function initial(shape: Shape, path: string, into: Values): void {
  const def = shape.schema.default;
  const { field } = shape;
  switch (field.kind) {
    case "object":
      for (const [name, sub] of field.properties) initial(shapeOf(sub), join(path, name), into);
      return;
    case "boolean":
      into[path] = typeof def === "boolean" ? def : false;
      return;
    case "enum":
      into[path] = def !== undefined ? JSON.stringify(def) : "";
      return;
    case "json":
      into[path] = def !== undefined ? JSON.stringify(def, null, 2) : "";
      return;
    case "const":
      return;
    default:
      into[path] = def === undefined || def === null ? "" : String(def);
  }
}

/** The path of property `name` of the field at `path`. */
export const join = (path: string, name: string) => (path ? `${path}.${name}` : name);

/** An input that makes no answer; the message names the field. */
export class FieldError extends Error {}

/** The answer the inputs make, or a FieldError naming the field. */
export function build(shape: Shape, path: string, values: Values, required: boolean): Json | undefined {
  const { field } = shape;
  const label = path || "the answer";
  const raw = values[path];
  const empty = raw === undefined || raw === "";
  if (field.kind !== "object" && field.kind !== "boolean" && field.kind !== "const" && empty) {
    if (shape.nullable) return null;
    if (required) throw new FieldError(`${label} is required`);
    return undefined;
  }
  switch (field.kind) {
    case "object": {
      const out: { [key: string]: Json } = {};
      for (const [name, sub] of field.properties) {
        const v = build(shapeOf(sub), join(path, name), values, field.required.has(name));
        if (v !== undefined) out[name] = v;
      }
      return out;
    }
    case "boolean":
      return raw === true;
    case "const":
      return field.value;
    case "enum":
      return JSON.parse(String(raw)) as Json;
    case "number": {
      const n = Number(raw);
      if (!Number.isFinite(n)) throw new FieldError(`${label} must be a number`);
      if (field.integer && !Number.isInteger(n)) throw new FieldError(`${label} must be a whole number`);
      return n;
    }
    case "json":
      try {
        return JSON.parse(String(raw)) as Json;
      } catch (e) {
        throw new FieldError(`${label} is not JSON: ${(e as Error).message}`);
      }
    default:
      return String(raw);
  }
}
