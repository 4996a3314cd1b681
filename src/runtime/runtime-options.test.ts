import { describe, expect, it } from "vitest";
import { defineAgent } from "../agent/define.ts";
import { InMemoryBackend } from "../backend/memory/memory-backend.ts";
import { InvalidInputError, NotSerializableError } from "../core/errors.ts";
import { silentLogger } from "../core/logger.ts";
import { Runtime } from "./runtime.ts";
import { RESERVED_META_KEYS, startMeta } from "./runtime-options.ts";

const agent = defineAgent({
  name: "ops",
  budget: { steps: 10 },
  compensate: "on_failure",
  tools: {},
  workflows: {
    async clean(_ctx, input: unknown) {
      return input;
    },
  },
});

const LIMIT = 1024 * 1024;

describe("startMeta", () => {
  it("refuses meta.imported from the caller: only an import sets it", () => {
    expect(() => startMeta(agent, { meta: { imported: "x" } }, LIMIT)).toThrow(
      /^meta\.imported is reserved: .*runtime\.importRun/,
    );
  });

  it("refuses meta.trace from the caller: the runtime records the run's trace context", () => {
    expect(() => startMeta(agent, { meta: { trace: { traceparent: "x" } } }, LIMIT)).toThrow(
      /^meta\.trace is reserved: .*OpenTelemetry span active when the run starts/,
    );
  });

  const optionKeys = RESERVED_META_KEYS.filter((key) => key !== "imported" && key !== "trace");
  it.each(optionKeys)("refuses meta.%s from the caller, naming the key and the option to use", (key) => {
    const refused = () => startMeta(agent, { meta: { [key]: "x" } }, LIMIT);
    expect(refused).toThrow(InvalidInputError);
    expect(refused).toThrow(new RegExp(`^meta\\.${key} is reserved: .*use the \`${key}\` option`));
    try {
      refused();
    } catch (error) {
      expect((error as InvalidInputError).issues).toEqual([{ path: ["meta", key], message: "reserved key" }]);
    }
  });

  it("sets the reserved keys from their options, checked", () => {
    const meta = startMeta(
      agent,
      {
        meta: { ticket: "T-1" },
        compensate: "never",
        budget: { toolCalls: 3 },
        job: { objective: "tidy" },
        module: "/srv/agents/ops.ts",
      },
      LIMIT,
    );
    expect(meta).toEqual({
      ticket: "T-1",
      compensate: "never",
      budget: { steps: 10, toolCalls: 3 },
      job: { objective: "tidy" },
      module: "/srv/agents/ops.ts",
    });
    expect(() => startMeta(agent, { budget: { steps: -1 } }, LIMIT)).toThrow(/budget "steps" must be >= 0/);
    expect(() => startMeta(agent, { module: "a\u0000b" }, LIMIT)).toThrow(/the run's module contains a NUL/);
  });

  it("refuses a meta that is not JSON or not an object, as any payload", () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => startMeta(agent, { meta: { n: 1n } as never }, LIMIT)).toThrow(NotSerializableError);
    expect(() => startMeta(agent, { meta: cycle as never }, LIMIT)).toThrow(NotSerializableError);
    expect(() => startMeta(agent, { meta: { x: Number.POSITIVE_INFINITY } }, LIMIT)).toThrow(/Infinity/);
    let deep: unknown = 1;
    for (let i = 0; i < 600; i++) deep = [deep];
    expect(() => startMeta(agent, { meta: { deep } as never }, LIMIT)).toThrow(/more than 512 levels/);
    expect(() => startMeta(agent, { meta: [] as never }, LIMIT)).toThrow(/meta must be an object/);
  });

  it("keeps a __proto__ key of the caller's meta as data", () => {
    const given = JSON.parse('{"__proto__":{"polluted":true},"b":2}') as Record<string, never>;
    const meta = startMeta(agent, { meta: given }, LIMIT);
    expect(Object.hasOwn(meta, "__proto__")).toBe(true);
    expect(JSON.stringify(meta)).toBe('{"__proto__":{"polluted":true},"b":2,"budget":{"steps":10}}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("runtime.run with a caller's meta", () => {
  it("refuses a meta.budget (which would bypass the budget's checks) and writes nothing", async () => {
    const runtime = new Runtime({ agents: [agent], backend: new InMemoryBackend(), logger: silentLogger });
    try {
      await expect(runtime.run("ops", "clean", null, { meta: { budget: { steps: -1 } } as never })).rejects.toThrow(
        /meta\.budget is reserved: .*use the `budget` option/,
      );
      await expect(runtime.run("ops", "clean", null, { meta: { n: 2n } as never })).rejects.toThrow(
        NotSerializableError,
      );
      expect(await runtime.listRuns()).toEqual([]);
    } finally {
      await runtime.shutdown({ graceMs: 0 });
    }
  });
});
