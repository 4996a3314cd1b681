import { InvalidInputError } from "./errors.ts";

/** What a zod schema offers that Cairn uses: `safeParse`. */
export interface InputSchema {
  safeParse(
    value: unknown,
  ):
    | { success: true; data: unknown }
    | { success: false; error: { issues: ReadonlyArray<{ path: PropertyKey[]; message: string }> } };
}

/**
 * `value` parsed by `schema` (zod's output: defaults filled in, transforms applied), or an
 * `InvalidInputError` whose message is `lead`, then each issue as `path: message`, then `after`.
 */
export function parseInput(
  schema: InputSchema,
  value: unknown,
  lead: string,
  after: string,
): { ok: true; value: unknown } | { ok: false; error: InvalidInputError } {
  const result = schema.safeParse(value);
  if (result.success) return { ok: true, value: result.data };
  const issues = result.error.issues.map((i) => ({ path: i.path, message: i.message }));
  const detail = issues.map((i) => `${i.path.length ? i.path.join(".") : "(root)"}: ${i.message}`).join("; ");
  return { ok: false, error: new InvalidInputError(`${lead}: ${detail}. ${after}`, issues) };
}

/** Is `value` something `parseInput` can use (a zod schema, say)? */
export function isInputSchema(value: unknown): value is InputSchema {
  return typeof (value as { safeParse?: unknown } | null)?.safeParse === "function";
}

/**
 * A workflow's input checked against the schema its agent declares for it (`inputs`), or taken
 * as it is when there is none; `outcome` says what a refusal left undone ("No run was started",
 * "The workflow did not run").
 */
export function parseWorkflowInput(
  agent: { name: string; inputs?: { readonly [workflow: string]: InputSchema | undefined } | undefined },
  workflow: string,
  input: unknown,
  outcome: string,
): { ok: true; value: unknown } | { ok: false; error: InvalidInputError } {
  const schema = agent.inputs?.[workflow];
  if (!schema) return { ok: true, value: input };
  return parseInput(
    schema,
    input,
    `invalid input for workflow "${workflow}" of agent "${agent.name}"`,
    `${outcome}; pass an input that matches the schema in the agent's \`inputs.${workflow}\``,
  );
}
