import type { ChatMessage, GenerateRequest, ModelTool, ScriptedTurn } from "../../src/index.ts";

/**
 * The tools the coding model is offered. The workflow carries each call out as a sandbox step
 * (`exec`, `writeFile`, `readFile`) in the repository's folder; none runs on the host.
 */
export const CODER_TOOLS: ModelTool[] = [
  {
    name: "run_command",
    description: "Runs a shell command in the repository (no network) and returns its exit code and last lines.",
    inputSchema: {
      type: "object",
      properties: { command: { type: "string", description: "a /bin/sh command line" } },
      required: ["command"],
    },
  },
  {
    name: "write_file",
    description: "Writes a whole file of the repository (a path relative to its root).",
    inputSchema: {
      type: "object",
      properties: { path: { type: "string" }, content: { type: "string" } },
      required: ["path", "content"],
    },
  },
  {
    name: "read_file",
    description: "Reads a file of the repository (a path relative to its root).",
    inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  },
];

export const CODER_SYSTEM =
  "You are a coding agent working in a git repository inside a sandbox without network. Use the tools to " +
  "read, change and test the code; run `sh test.sh` before you answer. Your work is committed and pushed " +
  "after each of your answers. Answer in one or two sentences saying what you changed.";

type Step = ScriptedTurn;

/** What the scripted coder does for a request that names `titleCase`. */
const TITLE_CASE: Step[] = [
  { text: "Looking at the library first.", toolCalls: [{ name: "run_command", args: { command: "ls src test" } }] },
  {
    text: "Adding titleCase with a test.",
    toolCalls: [
      {
        name: "write_file",
        args: {
          path: "src/title-case.js",
          content:
            "/** Each word with a capital first letter. */\nexport function titleCase(text) {\n" +
            "  return text.replace(/\\b([a-z])([a-z]*)/gi, (_, a, b) => a.toUpperCase() + b.toLowerCase());\n}\n",
        },
      },
      {
        name: "write_file",
        args: {
          path: "test/title-case.test.js",
          content:
            'import assert from "node:assert/strict";\nimport { test } from "node:test";\n' +
            'import { titleCase } from "../src/title-case.js";\n\n' +
            'test("titleCase", () => assert.equal(titleCase("hello wORLD"), "Hello World"));\n',
        },
      },
    ],
  },
  { text: "Running the tests.", toolCalls: [{ name: "run_command", args: { command: "sh test.sh" } }] },
  { text: "Added `titleCase` in src/title-case.js with a test; the tests pass." },
];

/** What the scripted coder does for a request that names `truncate`. */
const TRUNCATE: Step[] = [
  {
    text: "Adding truncate with a test.",
    toolCalls: [
      {
        name: "write_file",
        args: {
          path: "src/truncate.js",
          content:
            "/** At most `max` characters, an ellipsis marking a cut. */\nexport function truncate(text, max) {\n" +
            '  return text.length <= max ? text : text.slice(0, Math.max(0, max - 1)) + "…";\n}\n',
        },
      },
      {
        name: "write_file",
        args: {
          path: "test/truncate.test.js",
          content:
            'import assert from "node:assert/strict";\nimport { test } from "node:test";\n' +
            'import { truncate } from "../src/truncate.js";\n\n' +
            'test("truncate", () => assert.equal(truncate("abcdef", 4), "abc…"));\n',
        },
      },
    ],
  },
  { text: "Running the tests.", toolCalls: [{ name: "run_command", args: { command: "sh test.sh" } }] },
  { text: "Added `truncate` in src/truncate.js with a test; the tests pass." },
];

/** Anything else: a look at the repository and its history. */
const LOOK: Step[] = [
  { text: "Let me look.", toolCalls: [{ name: "run_command", args: { command: "git log --oneline -3 && ls" } }] },
  { text: "I looked at the repository; nothing to change for that." },
];

/**
 * The scripted coding model: it reads the conversation, takes the last user message as the task
 * (`titleCase`, `truncate`, or anything else), and plays the next step of that task's plan, counted
 * from the model answers given since that message. So a turn retried after the workspace was
 * rebuilt (a new user message saying so) plays its plan again from the start.
 */
export function scriptedCoder(request: GenerateRequest): ScriptedTurn {
  const messages: ChatMessage[] = request.messages ?? [];
  let last = -1;
  messages.forEach((m, i) => {
    if (m.role === "user") last = i;
  });
  const task = last >= 0 ? (messages[last] as { content: string }).content : "";
  const done = messages.slice(last + 1).filter((m) => m.role === "assistant").length;
  const plan = /titleCase/.test(task) ? TITLE_CASE : /truncate/.test(task) ? TRUNCATE : LOOK;
  return plan[Math.min(done, plan.length - 1)] as Step;
}
