/**
 * A research agent: the model ↔ tools loop (`ctx.agentLoop`) over a small local library of notes.
 * Every model call and every tool call is a checkpointed step, so a run killed mid-conversation
 * resumes where it was without paying for the calls it already made.
 *
 *   node bin/cairn.js run examples/research-agent/research.ts researcher answer \
 *     --input '{"question":"How does a durable runtime avoid paying twice after a crash?"}'
 *
 * The model is a scripted one (no network) unless the environment names a real one:
 * `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, or `OPENAI_BASE_URL` with `CAIRN_MODEL` for any
 * OpenAI-compatible server (see `modelFromEnvironment`). `CAIRN_DEMO_STREAM_DELAY_MS=40` slows the
 * scripted model's streaming so a run can be watched or killed halfway.
 *
 * In a project of your own, import from "cairn" instead of "../../src/index.ts".
 */
import { z } from "zod";
import { modelFromEnvironment } from "../../src/ai-sdk.ts";
import {
  type ChatMessage,
  defineAgent,
  defineConfig,
  defineTool,
  type GenerateRequest,
  ScriptedModel,
  type ScriptedTurn,
} from "../../src/index.ts";
import { NOTES, readNote, searchNotes } from "./notes.ts";

export const researcher = defineAgent({
  name: "researcher",
  description: "Answers questions from a library of notes, citing them",
  tools: {
    search_notes: defineTool({
      description: "Finds the notes that best match a query; returns their ids and titles.",
      input: z.object({ query: z.string().min(2).describe("words to look for") }),
      run: async (_ctx, { query }) => searchNotes(query),
    }),
    read_note: defineTool({
      description: "Reads one note in full by its id (e.g. n1).",
      input: z.object({ id: z.string().regex(/^n\d+$/, 'a note id looks like "n1"') }),
      run: async (_ctx, { id }) => {
        const note = readNote(id);
        if (!note) throw new Error(`no note ${id}; the ids are ${NOTES.map((n) => n.id).join(", ")}`);
        return note;
      },
    }),
    list_notes: defineTool({
      description: "Lists every note's id and title.",
      run: async () => NOTES.map(({ id, title }) => ({ id, title })),
    }),
  },
  workflows: {
    async answer(ctx, { question }: { question: string }) {
      const result = await ctx.agentLoop({
        model: "researcher",
        system:
          "You answer questions using only the notes you can search and read. Search first, read the most relevant notes, then answer in two or three sentences citing note ids like [n1].",
        prompt: question,
        maxTurns: 6,
      });
      return { answer: result.text, turns: result.turns, toolCalls: result.toolCalls, usage: result.usage };
    },
  },
});

/**
 * What the scripted model does, read from the conversation so far: search with the question,
 * read the two best notes, then answer from what they say.
 */
export function scriptedResearcher(request: GenerateRequest): ScriptedTurn {
  const messages = request.messages ?? [];
  const results = messages.filter((m): m is Extract<ChatMessage, { role: "tool" }> => m.role === "tool");
  const question = messages.find((m) => m.role === "user")?.content ?? "";
  if (results.length === 0) {
    return { text: "Let me search the notes.", toolCalls: [{ name: "search_notes", args: { query: question } }] };
  }
  const reads = results.filter((m) => m.name === "read_note" && !m.isError);
  if (reads.length === 0) {
    const hits = JSON.parse(results.at(-1)?.content ?? "[]") as { id: string }[];
    if (hits.length === 0) return { text: "The notes say nothing about that." };
    return {
      text: "Reading the most relevant notes.",
      toolCalls: hits.slice(0, 2).map((hit) => ({ name: "read_note", args: { id: hit.id } })),
    };
  }
  const notes = reads.map((m) => JSON.parse(m.content) as { id: string; text: string });
  const sentences = notes.map((note) => `${note.text.split(". ")[0]?.replace(/\.$/, "")} [${note.id}].`);
  return { text: sentences.join(" ") };
}

// Named, not "default": `cairn dev` loads this module beside others that bring their own default.
export const runtimeOptions = defineConfig({
  models: {
    researcher: modelFromEnvironment(
      process.env,
      () =>
        new ScriptedModel({
          name: "scripted-researcher",
          replies: [scriptedResearcher],
          streamDelayMs: Number(process.env.CAIRN_DEMO_STREAM_DELAY_MS ?? 0),
        }),
    ),
  },
});
