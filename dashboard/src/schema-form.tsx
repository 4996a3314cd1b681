import type { ComponentChild } from "preact";
import { useState } from "preact/hooks";
import type { Json } from "../../src/api/http-api.ts";

/**
 * A form built from a question's JSON Schema (as `z.toJSONSchema` writes it): strings, numbers,
 * integers, booleans, enums and consts, objects of those (nested), nullable fields; anything else
 * is a JSON box for that field. No schema: a free-text answer (sent as a string, or as JSON).
 *
 * Field inputs carry `data-testid="answer-field-<path>"` (path: property names joined by "."); a
 * whole answer that is a single box is `answer-input`.
 */

type Schema = { [key: string]: Json };

function asSchema(value: Json | undefined): Schema | null {
  return value && typeof value === "object" && !Array.isArray(value) ? value : null;
}

/** What kind of input a (sub)schema gets. */
type Field =
  | { kind: "string"; format?: string; multiline: boolean }
  | { kind: "number"; integer: boolean }
  | { kind: "boolean" }
  | { kind: "enum"; options: Json[] }
  | { kind: "const"; value: Json }
  | { kind: "object"; properties: [string, Schema][]; required: Set<string> }
  | { kind: "json" };

interface Shape {
  field: Field;
  nullable: boolean;
  schema: Schema;
}

/** The shape of a schema, after unwrapping `anyOf: [X, {type: "null"}]` and `type: [X, "null"]`. */
function shapeOf(schema: Schema): Shape {
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
type Values = Record<string, string | boolean>;

function initial(shape: Shape, path: string, into: Values): void {
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

const join = (path: string, name: string) => (path ? `${path}.${name}` : name);

class FieldError extends Error {}

/** The answer the inputs make, or a FieldError naming the field. */
function build(shape: Shape, path: string, values: Values, required: boolean): Json | undefined {
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

export function SchemaForm(props: {
  /** Makes the inputs' ids unique on the page (e.g. the wait's id). */
  idPrefix: string;
  schema: Json | null | undefined;
  busy: boolean;
  /** Not allowed to answer (the token's roles): the form shows, the button is off. */
  disabled?: boolean;
  submitLabel?: string;
  onSubmit: (value: Json) => void;
}) {
  const schema = asSchema(props.schema ?? null);
  const shape = schema ? shapeOf(schema) : null;
  const [values, setValues] = useState<Values>(() => {
    const v: Values = {};
    if (shape) initial(shape, "", v);
    else v[""] = "";
    return v;
  });
  const [asJson, setAsJson] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const set = (path: string, value: string | boolean) => setValues((old) => ({ ...old, [path]: value }));

  const submit = (e: Event) => {
    e.preventDefault();
    setProblem(null);
    try {
      let value: Json | undefined;
      if (!shape) {
        const text = String(values[""] ?? "");
        value = asJson ? (JSON.parse(text) as Json) : text;
      } else {
        value = build(shape, "", values, true);
      }
      props.onSubmit(value === undefined ? null : value);
    } catch (error) {
      setProblem((error as Error).message);
    }
  };

  return (
    <form class="schema-form" onSubmit={submit} noValidate>
      {shape ? (
        <FieldView shape={shape} path="" name="" required idBase={props.idPrefix} values={values} set={set} />
      ) : (
        <>
          <textarea
            class="mono"
            rows={3}
            value={String(values[""] ?? "")}
            onInput={(e) => set("", e.currentTarget.value)}
            data-testid="answer-input"
            aria-label="answer"
          />
          <label class="inline">
            <input type="checkbox" checked={asJson} onChange={(e) => setAsJson(e.currentTarget.checked)} /> send as JSON
          </label>
        </>
      )}
      {problem && <div class="error-text">{problem}</div>}
      <div class="actions">
        <button
          type="submit"
          class="primary"
          disabled={props.busy || props.disabled}
          title={props.disabled ? "your token's roles do not allow answering (operator or admin)" : undefined}
          data-testid="answer-submit"
        >
          {props.busy ? "Sending…" : (props.submitLabel ?? "Answer")}
        </button>
      </div>
    </form>
  );
}

function FieldView(props: {
  shape: Shape;
  path: string;
  name: string;
  required: boolean;
  idBase: string;
  values: Values;
  set: (path: string, value: string | boolean) => void;
}) {
  const { shape, path, values, set } = props;
  const { field, schema } = shape;
  const description = typeof schema.description === "string" ? schema.description : null;
  const title = typeof schema.title === "string" ? schema.title : props.name;
  const testid = path ? `answer-field-${path}` : "answer-input";
  const id = `${props.idBase}-${path || "value"}`;
  const value = values[path];
  const text = typeof value === "string" ? value : "";

  if (field.kind === "object") {
    const inner = field.properties.map(([name, sub]) => (
      <FieldView
        key={name}
        shape={shapeOf(sub)}
        path={join(path, name)}
        name={name}
        required={field.required.has(name)}
        idBase={props.idBase}
        values={values}
        set={set}
      />
    ));
    if (!path) return <div class="fields">{inner}</div>;
    return (
      <fieldset class="fields nested">
        <legend>{title}</legend>
        {description && <p class="hint">{description}</p>}
        {inner}
      </fieldset>
    );
  }

  let input: ComponentChild;
  switch (field.kind) {
    case "boolean":
      input = (
        <input
          type="checkbox"
          name={path}
          id={id}
          checked={value === true}
          onChange={(e) => set(path, e.currentTarget.checked)}
          data-testid={testid}
        />
      );
      break;
    case "enum":
      input = (
        <select
          name={path}
          id={id}
          value={text}
          onChange={(e) => set(path, e.currentTarget.value)}
          data-testid={testid}
        >
          <option value="">{props.required && !shape.nullable ? "choose…" : "—"}</option>
          {field.options.map((o) => (
            <option key={JSON.stringify(o)} value={JSON.stringify(o)}>
              {typeof o === "string" ? o : JSON.stringify(o)}
            </option>
          ))}
        </select>
      );
      break;
    case "const":
      input = <code data-testid={testid}>{JSON.stringify(field.value)}</code>;
      break;
    case "number":
      input = (
        <input
          type="number"
          name={path}
          id={id}
          step={field.integer ? 1 : "any"}
          value={text}
          onInput={(e) => set(path, e.currentTarget.value)}
          data-testid={testid}
        />
      );
      break;
    case "json":
      input = (
        <textarea
          class="mono"
          name={path}
          id={id}
          rows={4}
          value={text}
          placeholder="JSON"
          onInput={(e) => set(path, e.currentTarget.value)}
          data-testid={testid}
        />
      );
      break;
    default:
      input = field.multiline ? (
        <textarea
          name={path}
          id={id}
          rows={2}
          value={text}
          onInput={(e) => set(path, e.currentTarget.value)}
          data-testid={testid}
          {...(typeof schema.pattern === "string" ? { title: `pattern: ${schema.pattern}` } : {})}
        />
      ) : (
        <input
          type="text"
          name={path}
          id={id}
          value={text}
          onInput={(e) => set(path, e.currentTarget.value)}
          data-testid={testid}
        />
      );
  }

  return (
    <div class={field.kind === "boolean" ? "field inline" : "field"}>
      {(path || field.kind === "boolean") && (
        <label class="field-name" htmlFor={id}>
          {title || "answer"}
          {props.required && !shape.nullable && field.kind !== "boolean" && <span class="req">*</span>}
        </label>
      )}
      {input}
      {description && <span class="hint">{description}</span>}
      {typeof schema.pattern === "string" && <span class="hint mono">pattern {schema.pattern}</span>}
    </div>
  );
}
