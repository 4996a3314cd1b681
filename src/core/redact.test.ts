import { describe, expect, it } from "vitest";
import { ModelRequestError, ToolFailedError } from "./errors.ts";
import {
  REDACTED,
  redactJson,
  redactKnownJson,
  redactText,
  rememberEnvironmentSecrets,
  rememberSecret,
} from "./redact.ts";
import { serializeError } from "./serialize.ts";

describe("redactText", () => {
  it("replaces credentials by their shape", () => {
    const cases: [string, string][] = [
      [
        "Incorrect API key provided: sk-proj-abcdefghijklmnop1234567890. You can find your API key at https://platform.openai.com/account/api-keys.",
        `Incorrect API key provided: ${REDACTED}. You can find your API key at https://platform.openai.com/account/api-keys.`,
      ],
      ["key sk-ant-api03-AAAAAAAAAAAAAAAAAAAA-BBBB is invalid", `key ${REDACTED} is invalid`],
      ["stripe sk_live_abcdefghijklmnop1234", `stripe ${REDACTED}`],
      ["google AIzaSyA-12345678901234567890123456789012", `google ${REDACTED}`],
      ["gh ghp_abcdefghijklmnopqrstuvwxyz0123456789", `gh ${REDACTED}`],
      ["aws AKIAIOSFODNN7EXAMPLE", `aws ${REDACTED}`],
      ["jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0", `jwt ${REDACTED}`],
      ["-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY----- after", `${REDACTED} after`],
    ];
    for (const [text, expected] of cases) expect(redactText(text)).toBe(expected);
  });

  it("replaces the value after a telling label: headers, query parameters, fields, URL passwords", () => {
    const cases: [string, string][] = [
      ["Authorization: Bearer abc.def.ghi123456", `Authorization: Bearer ${REDACTED}`],
      ['{"authorization":"Basic dXNlcjpwYXNz"}', `{"authorization":"Basic ${REDACTED}"}`],
      ["sent Bearer abcdefgh12345678 to the API", `sent Bearer ${REDACTED} to the API`],
      ["x-api-key: 0123456789abcdef", `x-api-key: ${REDACTED}`],
      ['{"api_key": "plain-looking-value"}', `{"api_key": "${REDACTED}"}`],
      ["GET /v1/geo?address=x&key=plainvalue123&z=1", `GET /v1/geo?address=x&key=${REDACTED}&z=1`],
      ["api_key=12345678abcdefgh&x=1", `api_key=${REDACTED}&x=1`],
      ["password: hunter2hunter2, user: bob", `password: ${REDACTED}, user: bob`],
      ["postgres://cairn:s3cr3t-pw@db:5432/cairn", `postgres://cairn:${REDACTED}@db:5432/cairn`],
      ["aws_secret_access_key = wJalrXUtnFEMI/K7MDENG", `aws_secret_access_key = ${REDACTED}`],
    ];
    for (const [text, expected] of cases) expect(redactText(text)).toBe(expected);
  });

  it("leaves ordinary text alone, and text already redacted as it is", () => {
    for (const text of [
      "skill-based tasks, ask-me-anything, the token count was 12, key points",
      "https://platform.openai.com/account/api-keys",
      "the password was wrong",
      "Bearer authentication is required for this endpoint",
    ]) {
      expect(redactText(text)).toBe(text);
    }
    const once = redactText("Authorization: Bearer abcdefgh12345678 and sk-abcdefghijklmnopqrstuv");
    expect(redactText(once)).toBe(once);
  });

  it("replaces the values this process knows, whatever their shape, raw and JSON-escaped", () => {
    rememberSecret('plain"secret\\value-1');
    rememberEnvironmentSecrets({
      MY_SERVICE_TOKEN: "tok-looks-ordinary-42",
      HOME: "/home/someone-else",
      POSTGRES_PASSWORD: "postgres",
    });
    rememberSecret("short");
    expect(redactText('used plain"secret\\value-1 and tok-looks-ordinary-42')).toBe(`used ${REDACTED} and ${REDACTED}`);
    expect(redactText(JSON.stringify({ v: 'plain"secret\\value-1' }))).toBe(`{"v":"${REDACTED}"}`);
    // Not named like a credential, or too short to tell from ordinary text.
    expect(redactText("/home/someone-else is short")).toBe("/home/someone-else is short");
    expect(redactText("connected to postgres")).toBe("connected to postgres");
    expect(redactKnownJson({ a: ["x tok-looks-ordinary-42 y"], b: 1 })).toEqual({ a: [`x ${REDACTED} y`], b: 1 });
  });
});

describe("redactJson", () => {
  it("redacts strings everywhere and the whole value of keys named like credentials; returns the same value when clean", () => {
    const request = {
      headers: { Authorization: "anything at all", "x-api-key": "k", accept: "json" },
      messages: [{ role: "user", content: "my key is sk-abcdefghijklmnopqrstuvwx" }],
      apiKey: "whatever",
      n: 3,
    };
    expect(redactJson(request)).toEqual({
      headers: { Authorization: REDACTED, "x-api-key": REDACTED, accept: "json" },
      messages: [{ role: "user", content: `my key is ${REDACTED}` }],
      apiKey: REDACTED,
      n: 3,
    });
    const clean = { messages: [{ role: "user", content: "hello" }], n: 1 };
    expect(redactJson(clean)).toBe(clean);
    const proto = JSON.parse('{"__proto__": {"password": "x1234567"}}');
    const out = redactJson(proto) as Record<string, unknown>;
    expect(Object.hasOwn(out, "__proto__")).toBe(true);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });
});

describe("serializeError", () => {
  it("redacts the message, stack, data and causes of every error it stores", () => {
    const cause = new ModelRequestError(
      "openai.chat answered 401: Incorrect API key provided: sk-proj-abcdefghij1234567890",
      {
        provider: "openai.chat",
        status: 401,
      },
    );
    const error = new ToolFailedError(
      "tool failed: Authorization: Bearer abcdefgh12345678",
      { tool: "t", attempts: 1 },
      { cause },
    );
    const stored = JSON.stringify(serializeError(error));
    expect(stored).not.toContain("sk-proj-abcdefghij1234567890");
    expect(stored).not.toContain("abcdefgh12345678");
    expect(serializeError(error).cause?.message).toBe(
      `openai.chat answered 401: Incorrect API key provided: ${REDACTED}`,
    );
    expect(serializeError("thrown string with api_key=abcdef123456").message).toBe(
      `thrown string with api_key=${REDACTED}`,
    );
  });
});
