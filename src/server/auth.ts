import { createHash, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import type { MiddlewareHandler } from "hono";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { type Permission, ROLE_PERMISSIONS, ROLES, type Role } from "../api/roles.ts";
import type { Actor } from "../core/records.ts";
import { switchedPrincipal } from "./dev-identity.ts";
import { ApiError } from "./errors.ts";

/**
 * Bearer-token authentication. Tokens come from a file or from `CAIRN_TOKENS`; each has a subject
 * (who it is: recorded as the actor of everything the token does) and roles (`api/roles.ts`). With no
 * tokens configured the server authenticates nobody and every request acts as the local admin —
 * which is why `serve` then listens on loopback only.
 */

/** One configured token. */
export interface TokenConfig {
  /** The secret a client sends as `Authorization: Bearer <token>`; at least 16 characters. */
  token: string;
  /** Who the token is (e.g. "alice"): the actor recorded for what it does, and the approver's identity. */
  subject: string;
  roles: readonly Role[];
}

/** Who a request acts as. */
export interface Principal {
  subject: string;
  roles: readonly Role[];
  /** `none` when the server has no tokens (every request is the local admin). */
  auth: "token" | "none";
}

/** The principal of every request on a server without tokens. */
export const LOCAL_ADMIN: Principal = Object.freeze({
  subject: "local",
  roles: Object.freeze(["admin"] as const),
  auth: "none",
});

/** A token's configuration could not be used; the message names the entry and the fix. */
export class TokenConfigError extends Error {
  readonly code = "INVALID_TOKENS" as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "TokenConfigError";
  }
}

const TokenSchema = z.strictObject({
  token: z.string().min(16, "a token must be at least 16 characters (make one with `openssl rand -hex 32`)"),
  subject: z.string().min(1, "a token needs a subject (who it is)"),
  roles: z.array(z.enum(ROLES)).min(1, `a token needs at least one role (${ROLES.join(", ")})`),
});

/** Options of {@link loadTokens}. */
export interface LoadTokensOptions {
  /** A JSON or YAML file holding `[{ token, subject, roles: [...] }, ...]`. @default none */
  file?: string;
  /**
   * The environment to read `CAIRN_TOKENS` from: `token:subject:role1+role2,token2:subject2:role`.
   * @default process.env
   */
  env?: Readonly<Record<string, string | undefined>>;
}

/**
 * The tokens of the file and of `CAIRN_TOKENS` (both, when both are set). Refuses, naming the
 * entry, a token shorter than 16 characters, one without subject or roles, an unknown role, and
 * a token given twice. An empty result means authentication is off.
 *
 * @example
 * // CAIRN_TOKENS="3f9c…:alice:operator+approver,77ab…:dashboard:viewer"
 * const server = createServer(runtime, { tokens: loadTokens({ file: process.env.CAIRN_TOKENS_FILE }) });
 */
export function loadTokens(options: LoadTokensOptions = {}): TokenConfig[] {
  const tokens: TokenConfig[] = [];
  if (options.file !== undefined) tokens.push(...tokensFromFile(options.file));
  const env = (options.env ?? process.env).CAIRN_TOKENS;
  if (env !== undefined && env.trim() !== "") tokens.push(...parseTokensEnv(env));
  return checkTokens(tokens, "the configured tokens");
}

/** Parses `token:subject:role1+role2,token2:subject2:role` (the `CAIRN_TOKENS` format). */
export function parseTokensEnv(text: string): TokenConfig[] {
  const entries = text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  return entries.map((entry, index) => {
    const parts = entry.split(":");
    if (parts.length !== 3) {
      throw new TokenConfigError(
        `CAIRN_TOKENS entry ${index + 1} has ${parts.length} ':'-separated fields, not 3; write token:subject:role1+role2 (tokens and subjects contain no ':' or ',')`,
      );
    }
    const [token = "", subject = "", roles = ""] = parts;
    return validToken(
      { token, subject, roles: roles.split("+").filter((r) => r !== "") },
      `CAIRN_TOKENS entry ${index + 1}`,
    );
  });
}

function tokensFromFile(file: string): TokenConfig[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new TokenConfigError(`cannot read the tokens file ${file}: ${(error as Error).message}`, { cause: error });
  }
  let data: unknown;
  try {
    // YAML is a superset of JSON: one parser reads both.
    data = parseYaml(text);
  } catch (error) {
    throw new TokenConfigError(`the tokens file ${file} is neither JSON nor YAML: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const list = Array.isArray(data) ? data : (data as { tokens?: unknown } | null)?.tokens;
  if (!Array.isArray(list)) {
    throw new TokenConfigError(
      `the tokens file ${file} must hold a list of { token, subject, roles } (or { tokens: [...] })`,
    );
  }
  return list.map((entry, index) => validToken(entry, `entry ${index + 1} of ${file}`));
}

function validToken(entry: unknown, where: string): TokenConfig {
  const parsed = TokenSchema.safeParse(entry);
  if (!parsed.success) {
    const detail = parsed.error.issues.map((i) => `${i.path.join(".") || "(entry)"}: ${i.message}`).join("; ");
    throw new TokenConfigError(`${where} is not a valid token: ${detail}`);
  }
  return parsed.data;
}

function checkTokens(tokens: TokenConfig[], where: string): TokenConfig[] {
  const seen = new Set<string>();
  for (const t of tokens) {
    const valid = validToken(t, `a token of ${t.subject ? `subject "${t.subject}"` : where}`);
    if (seen.has(valid.token)) {
      throw new TokenConfigError(
        `a token is given twice in ${where} (subject "${valid.subject}"); every token must be unique`,
      );
    }
    seen.add(valid.token);
  }
  return tokens;
}

/** Finds the principal of a presented token, comparing digests in constant time. */
export class TokenAuthenticator {
  readonly #entries: { digest: Buffer; principal: Principal }[];

  constructor(tokens: readonly TokenConfig[]) {
    this.#entries = checkTokens([...tokens], "the server's tokens").map((t) => ({
      digest: digest(t.token),
      principal: Object.freeze({
        subject: t.subject,
        roles: Object.freeze([...new Set(t.roles)]),
        auth: "token" as const,
      }),
    }));
  }

  /** Whether any token is configured (authentication is on). */
  get enabled(): boolean {
    return this.#entries.length > 0;
  }

  /** The principal of `token`, or undefined. Looks at every entry whatever matches, so timing says nothing. */
  find(token: string): Principal | undefined {
    const presented = digest(token);
    let found: Principal | undefined;
    for (const entry of this.#entries) {
      if (timingSafeEqual(entry.digest, presented) && found === undefined) found = entry.principal;
    }
    return found;
  }
}

function digest(token: string): Buffer {
  return createHash("sha256").update(token, "utf8").digest();
}

/** The Hono variables the server sets on each request. */
export interface ServerEnv {
  Variables: {
    principal: Principal;
    /** The body limit in force (`bodyLimitBytes`). */
    bodyLimitBytes: number;
  };
}

/**
 * Authenticates every request it sees: `Authorization: Bearer <token>`, and nothing else — a
 * token in a URL (`?access_token=`) ends up in logs, histories and Referer headers, so it is
 * refused, event streams included (the dashboard reads them with fetch). Without tokens
 * configured every request is `local` (by default {@link LOCAL_ADMIN}), or, when `switchable`,
 * whoever its `X-Cairn-As` / `X-Cairn-Role` headers name (dev-identity.ts).
 */
export function authenticate(
  authenticator: TokenAuthenticator,
  local: Principal = LOCAL_ADMIN,
  switchable = false,
): MiddlewareHandler<ServerEnv> {
  return async (c, next) => {
    if (!authenticator.enabled) {
      c.set("principal", switchable ? switchedPrincipal(local, (name) => c.req.header(name)) : local);
      return next();
    }
    const header = c.req.header("authorization");
    let token: string | undefined;
    if (header !== undefined) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (!match) {
        throw new ApiError("UNAUTHENTICATED", "the Authorization header must be `Bearer <token>`");
      }
      token = match[1];
    }
    if (token === undefined || token === "") {
      throw new ApiError(
        "UNAUTHENTICATED",
        c.req.query("access_token") !== undefined
          ? "a token in the URL (?access_token=) is not accepted: URLs end up in logs and histories; send `Authorization: Bearer <token>` (an event stream too: read it with fetch)"
          : "this server needs a bearer token: send `Authorization: Bearer <token>` (tokens are configured with CAIRN_TOKENS or a tokens file)",
      );
    }
    const principal = authenticator.find(token);
    if (!principal) throw new ApiError("UNAUTHENTICATED", "the bearer token is not one this server knows");
    c.set("principal", principal);
    return next();
  };
}

/** Refuses the request (403 FORBIDDEN) unless the principal's roles grant `permission`. */
export function requires(permission: Permission): MiddlewareHandler<ServerEnv> {
  return async (c, next) => {
    const principal = c.get("principal");
    if (!principal.roles.some((role) => ROLE_PERMISSIONS[role].includes(permission))) {
      const granting = ROLES.filter((r) => ROLE_PERMISSIONS[r].includes(permission));
      throw new ApiError(
        "FORBIDDEN",
        `${principal.subject} (roles: ${principal.roles.join(", ") || "none"}) may not ${permission === "read" ? "read" : permission === "approve" ? "approve or deny" : permission === "administer" ? "import, move or prune runs" : "act on runs"}; this needs one of the roles ${granting.join(", ")}`,
        { needs: granting, roles: principal.roles },
      );
    }
    return next();
  };
}

/** The actor recorded for what a principal does. */
export function actorOf(principal: Principal): Actor {
  return { kind: "user", id: principal.subject };
}
