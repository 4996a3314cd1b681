import { describe, expect, it } from "vitest";
import { InvalidDefinitionError, PolicyDeniedError } from "./errors.ts";
import {
  evaluatePolicies,
  type Policy,
  type PolicyCall,
  type PolicyDecision,
  type PolicyDenial,
  policyDeniedError,
  policyVersions,
  validatePolicies,
} from "./policies.ts";

const call: PolicyCall = {
  kind: "tool",
  agent: "ops",
  name: "delete_user",
  args: { id: 7 },
  run: { id: "r1", agent: "ops", workflow: "clean", input: {}, meta: {}, parentRunId: null },
};

function policy(name: string, check: (call: PolicyCall) => unknown, version = "1"): Policy {
  return { name, version, check: check as (call: PolicyCall) => PolicyDecision };
}

describe("validatePolicies", () => {
  it("accepts good policies and no policies", () => {
    expect(() => validatePolicies([])).not.toThrow();
    expect(() =>
      validatePolicies([policy("a", () => "allow"), policy("B.x-y_1", () => "allow", "2024-01")]),
    ).not.toThrow();
  });

  it.each([
    ["", /policy name "" \(policies\[0\]\) is not valid: start with a letter/],
    ["1abc", /policy name "1abc"/],
    ["has space", /policy name "has space"/],
    ["a".repeat(129), /at most 128 characters/],
  ])("refuses the name %j", (name, message) => {
    expect(() => validatePolicies([policy(name, () => "allow")])).toThrow(InvalidDefinitionError);
    expect(() => validatePolicies([policy(name, () => "allow")])).toThrow(message);
  });

  it("accepts a name of exactly 128 characters", () => {
    expect(() => validatePolicies([policy(`a${"b".repeat(127)}`, () => "allow")])).not.toThrow();
  });

  it("refuses an empty or missing version, and one with a comma", () => {
    expect(() => validatePolicies([policy("p", () => "allow", "")])).toThrow(
      /policy "p" has no version \(got ""\): give it a non-empty string/,
    );
    expect(() => validatePolicies([policy("p", () => "allow", "  ")])).toThrow(InvalidDefinitionError);
    expect(() => validatePolicies([{ name: "p", check: () => "allow" } as unknown as Policy])).toThrow(
      /has no version \(got undefined\)/,
    );
    expect(() => validatePolicies([policy("p", () => "allow", "1,2")])).toThrow(/may not contain ","/);
  });

  it("refuses two policies with one name", () => {
    expect(() => validatePolicies([policy("p", () => "allow"), policy("p", () => "allow", "2")])).toThrow(
      /two policies are named "p": give each policy a unique name/,
    );
  });

  it("refuses a check that is not a function, and a non-object policy", () => {
    expect(() => validatePolicies([{ name: "p", version: "1", check: "allow" } as unknown as Policy])).toThrow(
      /policy "p" has no check function \(got "allow"\)/,
    );
    expect(() => validatePolicies([null as unknown as Policy])).toThrow(/policies\[0\] is null/);
    expect(() => validatePolicies("x" as unknown as Policy[])).toThrow(/policies must be an array/);
  });
});

describe("policyVersions", () => {
  it("is null without policies", () => {
    expect(policyVersions([])).toBeNull();
  });

  it("lists name@version sorted by name", () => {
    expect(policyVersions([policy("b", () => "allow", "2"), policy("a", () => "allow", "1")])).toBe("a@1,b@2");
    expect(policyVersions([policy("Z", () => "allow"), policy("a", () => "allow")])).toBe("Z@1,a@1");
  });
});

describe("evaluatePolicies", () => {
  it("allows with no policies and when all allow", () => {
    expect(evaluatePolicies([], call)).toEqual({ kind: "allow" });
    expect(evaluatePolicies([policy("a", () => "allow"), policy("b", () => "allow")], call)).toEqual({
      kind: "allow",
    });
  });

  it("passes the call to each policy, bound to the policy", () => {
    const seen: PolicyCall[] = [];
    const p = {
      name: "p",
      version: "1",
      mark: "allow" as const,
      check(c: PolicyCall): PolicyDecision {
        seen.push(c);
        return this.mark;
      },
    };
    expect(evaluatePolicies([p], call)).toEqual({ kind: "allow" });
    expect(seen).toEqual([call]);
  });

  it("asks every policy, in order, even after a deny", () => {
    const order: string[] = [];
    const ps = ["a", "b", "c"].map((n) =>
      policy(n, () => {
        order.push(n);
        return n === "a" ? { deny: "no" } : "allow";
      }),
    );
    evaluatePolicies(ps, call);
    expect(order).toEqual(["a", "b", "c"]);
  });

  it("lets the first deny win over later denies and over approvals before it", () => {
    const result = evaluatePolicies(
      [
        policy("appr", () => ({ requireApproval: { expiresInMs: 1000 } })),
        policy("d1", () => ({ deny: "first" }), "3"),
        policy("d2", () => ({ deny: "second" })),
      ],
      call,
    );
    expect(result).toEqual({ kind: "deny", policy: "d1", policyVersion: "3", reason: "first" });
  });

  it("takes the first approval when nothing denies, with defaults", () => {
    const result = evaluatePolicies(
      [
        policy("allow", () => "allow"),
        policy("a1", () => ({ requireApproval: { expiresInMs: 60_000 } }), "2"),
        policy("a2", () => ({ requireApproval: { expiresInMs: 5, action: "other" } })),
      ],
      call,
    );
    expect(result).toEqual({
      kind: "approval",
      policy: "a1",
      policyVersion: "2",
      approvers: [],
      expiresInMs: 60_000,
      action: "policy:a1:tool:delete_user",
    });
  });

  it("keeps the approval's approvers (copied) and action", () => {
    const approvers = ["alice", "bob"] as const;
    const result = evaluatePolicies(
      [policy("a", () => ({ requireApproval: { approvers, expiresInMs: 10, action: "delete a user" } }))],
      call,
    );
    expect(result).toMatchObject({ kind: "approval", approvers: ["alice", "bob"], action: "delete a user" });
    if (result.kind !== "approval") throw new Error("expected an approval");
    expect(result.approvers).not.toBe(approvers);
  });

  it("names spawn, llm and domain calls in the default action", () => {
    const p = policy("gate", () => ({ requireApproval: { expiresInMs: 1 } }));
    expect(evaluatePolicies([p], { ...call, kind: "spawn", name: "child.run" })).toMatchObject({
      action: "policy:gate:spawn:child.run",
    });
    expect(evaluatePolicies([p], { ...call, kind: "llm", name: "gpt-4o" })).toMatchObject({
      action: "policy:gate:llm:gpt-4o",
    });
    expect(evaluatePolicies([p], { ...call, kind: "domain", name: "finance.quarterly" })).toMatchObject({
      action: "policy:gate:domain:finance.quarterly",
    });
  });

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY, "1000", undefined])(
    "denies an approval with expiresInMs %s",
    (expiresInMs) => {
      const result = evaluatePolicies([policy("a", () => ({ requireApproval: { expiresInMs } }))], call);
      expect(result.kind).toBe("deny");
      expect((result as PolicyDenial).reason).toMatch(
        /an approval needs expiresInMs, a finite number of milliseconds > 0/,
      );
    },
  );

  it("denies an approval with bad approvers or action", () => {
    const bad = evaluatePolicies([policy("a", () => ({ requireApproval: { expiresInMs: 1, approvers: "x" } }))], call);
    expect((bad as PolicyDenial).reason).toMatch(/approvers must be an array of strings/);
    const bad2 = evaluatePolicies([policy("a", () => ({ requireApproval: { expiresInMs: 1, action: 3 } }))], call);
    expect((bad2 as PolicyDenial).reason).toMatch(/action must be a string/);
  });

  it("counts a throwing policy as a deny", () => {
    const result = evaluatePolicies(
      [
        policy("ok", () => "allow"),
        policy(
          "boom",
          () => {
            throw new Error("db down");
          },
          "7",
        ),
      ],
      call,
    );
    expect(result).toEqual({ kind: "deny", policy: "boom", policyVersion: "7", reason: "policy threw: db down" });
    const nonError = evaluatePolicies(
      [
        policy("boom", () => {
          throw "plain";
        }),
      ],
      call,
    );
    expect((nonError as PolicyDenial).reason).toBe("policy threw: plain");
  });

  it("counts a policy returning a Promise as a deny, without an unhandled rejection", async () => {
    const resolving = evaluatePolicies([policy("async", async () => "allow")], call);
    expect(resolving.kind).toBe("deny");
    expect((resolving as PolicyDenial).reason).toMatch(
      /policies must return "allow", \{ deny: reason \} or \{ requireApproval: .* \} synchronously/,
    );
    const rejecting = evaluatePolicies([policy("async", () => Promise.reject(new Error("late")))], call);
    expect(rejecting.kind).toBe("deny");
    // biome-ignore lint/suspicious/noThenProperty: a hand-made thenable is what this checks
    const thenable = evaluatePolicies([policy("t", () => ({ then: () => undefined }))], call);
    expect(thenable.kind).toBe("deny");
    // A rejection left unhandled would fail the test run.
    await new Promise((r) => setTimeout(r, 5));
  });

  it("lets an earlier deny win over a later broken policy", () => {
    const result = evaluatePolicies(
      [
        policy("d", () => ({ deny: "plain no" })),
        policy("boom", () => {
          throw new Error("x");
        }),
      ],
      call,
    );
    expect(result).toMatchObject({ policy: "d", reason: "plain no" });
  });

  it.each([
    [undefined, /policy returned undefined/],
    [null, /policy returned null/],
    ["deny", /policy returned "deny"/],
    [true, /policy returned true/],
    [{}, /policy returned \{\}/],
    [{ deny: 5 }, /policy returned \{"deny":5\}/],
    [{ requireApproval: true }, /policy returned/],
  ])("denies the invalid decision %j", (decision, message) => {
    const result = evaluatePolicies([policy("p", () => decision)], call);
    expect(result.kind).toBe("deny");
    expect((result as PolicyDenial).reason).toMatch(message);
    expect((result as PolicyDenial).reason).toMatch(/synchronously/);
  });

  it("gives an empty deny reason a placeholder", () => {
    expect(evaluatePolicies([policy("p", () => ({ deny: "" }))], call)).toMatchObject({
      reason: "(no reason given)",
    });
  });
});

describe("policyDeniedError", () => {
  it("names the policy, its version, the call, the agent, the run and the reason", () => {
    const result = evaluatePolicies([policy("no_prod_writes", () => ({ deny: "prod is read-only" }), "3")], call);
    const error = policyDeniedError(result as PolicyDenial, call);
    expect(error).toBeInstanceOf(PolicyDeniedError);
    expect(error.code).toBe("POLICY_DENIED");
    expect(error.policy).toBe("no_prod_writes");
    expect(error.policyVersion).toBe("3");
    expect(error.message).toBe(
      'policy "no_prod_writes"@3 denied tool "delete_user" of agent "ops" (run r1): prod is read-only',
    );
  });

  it("words each kind of call", () => {
    const denial: PolicyDenial = { kind: "deny", policy: "p", policyVersion: "1", reason: "no" };
    expect(policyDeniedError(denial, { ...call, kind: "llm", name: "gpt-4o" }).message).toContain(
      'denied model call "gpt-4o"',
    );
    expect(policyDeniedError(denial, { ...call, kind: "domain", name: "hr.salaries" }).message).toContain(
      'denied domain read "hr.salaries"',
    );
    expect(policyDeniedError(denial, { ...call, kind: "spawn", name: "ops.purge" }).message).toContain(
      'denied spawn of "ops.purge"',
    );
  });
});
