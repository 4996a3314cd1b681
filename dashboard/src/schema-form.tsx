import { useState } from "preact/hooks";
import type { Json } from "../../src/api/http-api.ts";
import { asSchema, build, type Field, initial, join, type Shape, shapeOf, type Values } from "./schema-shape.ts";

/**
 * A form built from a question's JSON Schema (as `z.toJSONSchema` writes it): strings, numbers,
 * integers, booleans, enums and consts, objects of those (nested), nullable fields; anything else
 * is a JSON box for that field. No schema: a free-text answer (sent as a string, or as JSON).
 *
 * Field inputs carry `data-testid="answer-field-<path>"` (path: property names joined by "."); a
 * whole answer that is a single box is `answer-input`.
 */

export function SchemaForm(props: {
  /** Makes the inputs' ids unique on the page (e.g. the wait's id). */
  idPrefix: string;
  schema: Json | null | undefined;
  busy: boolean;
  /** Not allowed to answer (the token's roles): the form shows, the button is off. */
  disabled?: boolean;
  submitLabel?: string;
  /** The start of the inputs' test ids (`<testids>-field-<path>`, `<testids>-submit`). @default "answer" */
  testids?: string;
  onSubmit: (value: Json) => void;
}) {
  const t = props.testids ?? "answer";
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
        <FieldView
          shape={shape}
          path=""
          name=""
          required
          idBase={props.idPrefix}
          testids={t}
          values={values}
          set={set}
        />
      ) : (
        <FreeAnswer
          text={String(values[""] ?? "")}
          onText={(text) => set("", text)}
          asJson={asJson}
          setAsJson={setAsJson}
          testid={`${t}-input`}
        />
      )}
      {problem && <div class="error-text">{problem}</div>}
      <div class="actions">
        <button
          type="submit"
          class="primary"
          disabled={props.busy || props.disabled}
          title={props.disabled ? "your token's roles do not allow answering (operator or admin)" : undefined}
          data-testid={`${t}-submit`}
        >
          {props.busy ? "Sending…" : (props.submitLabel ?? "Answer")}
        </button>
      </div>
    </form>
  );
}

/** An answer without a schema: free text, sent as a string or as JSON. */
function FreeAnswer(props: {
  text: string;
  onText: (text: string) => void;
  asJson: boolean;
  setAsJson: (asJson: boolean) => void;
  testid: string;
}) {
  return (
    <>
      <textarea
        class="mono"
        rows={3}
        value={props.text}
        onInput={(e) => props.onText(e.currentTarget.value)}
        data-testid={props.testid}
        aria-label="answer"
      />
      <label class="inline">
        <input type="checkbox" checked={props.asJson} onChange={(e) => props.setAsJson(e.currentTarget.checked)} /> send
        as JSON
      </label>
    </>
  );
}

interface FieldProps {
  shape: Shape;
  path: string;
  name: string;
  required: boolean;
  idBase: string;
  testids: string;
  values: Values;
  set: (path: string, value: string | boolean) => void;
}

/** One field of the form: its label, input and hints (an object's fields, nested). */
function FieldView(props: FieldProps) {
  const { shape, path, values, set } = props;
  const { field, schema } = shape;
  const description = typeof schema.description === "string" ? schema.description : null;
  const title = typeof schema.title === "string" ? schema.title : props.name;
  const testid = path ? `${props.testids}-field-${path}` : `${props.testids}-input`;
  const id = `${props.idBase}-${path || "value"}`;
  const value = values[path];

  if (field.kind === "object") return <ObjectFields {...props} field={field} title={title} description={description} />;

  return (
    <div class={field.kind === "boolean" ? "field inline" : "field"}>
      {(path || field.kind === "boolean") && (
        <label class="field-name" htmlFor={id}>
          {title || "answer"}
          {props.required && !shape.nullable && field.kind !== "boolean" && <span class="req">*</span>}
        </label>
      )}
      <FieldInput shape={shape} path={path} id={id} testid={testid} required={props.required} value={value} set={set} />
      {description && <span class="hint">{description}</span>}
      {typeof schema.pattern === "string" && <span class="hint mono">pattern {schema.pattern}</span>}
    </div>
  );
}

/** An object's fields, nested in a fieldset unless it is the whole answer. */
function ObjectFields(
  props: FieldProps & { field: Extract<Field, { kind: "object" }>; title: string; description: string | null },
) {
  const { field, path, values, set, title, description } = props;
  const inner = field.properties.map(([name, sub]) => (
    <FieldView
      key={name}
      shape={shapeOf(sub)}
      path={join(path, name)}
      name={name}
      required={field.required.has(name)}
      idBase={props.idBase}
      testids={props.testids}
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

interface InputProps {
  shape: Shape;
  path: string;
  id: string;
  testid: string;
  required: boolean;
  value: string | boolean | undefined;
  set: (path: string, value: string | boolean) => void;
}

/** The input of one field that is not an object. */
function FieldInput(props: InputProps) {
  const { shape, path, id, testid, value, set } = props;
  const { field } = shape;
  const text = typeof value === "string" ? value : "";
  switch (field.kind) {
    case "boolean":
      return (
        <input
          type="checkbox"
          name={path}
          id={id}
          checked={value === true}
          onChange={(e) => set(path, e.currentTarget.checked)}
          data-testid={testid}
        />
      );
    case "enum":
      return <EnumSelect {...props} options={field.options} text={text} />;
    case "const":
      return <code data-testid={testid}>{JSON.stringify(field.value)}</code>;
    case "number":
      return (
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
    case "json":
      return (
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
    default:
      return <TextInput {...props} multiline={field.kind === "string" && field.multiline} text={text} />;
  }
}

/** The options of an enum field, each sent as its JSON. */
function EnumSelect(props: InputProps & { options: Json[]; text: string }) {
  const { shape, path, id, testid, set, text } = props;
  return (
    <select name={path} id={id} value={text} onChange={(e) => set(path, e.currentTarget.value)} data-testid={testid}>
      <option value="">{props.required && !shape.nullable ? "choose…" : "—"}</option>
      {props.options.map((o) => (
        <option key={JSON.stringify(o)} value={JSON.stringify(o)}>
          {typeof o === "string" ? o : JSON.stringify(o)}
        </option>
      ))}
    </select>
  );
}

/** A string field: a text box, or an area for long strings (with its pattern as the title). */
function TextInput(props: InputProps & { multiline: boolean; text: string }) {
  const { shape, path, id, testid, set, text } = props;
  const { schema } = shape;
  return props.multiline ? (
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
