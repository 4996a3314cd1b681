import type { Json } from "./records.ts";

/**
 * Keeps credentials out of what Cairn stores (DESIGN §6, "Secrets"). {@link redactText} finds them
 * in text and puts {@link REDACTED} in their place; every error is passed through it before it is
 * stored (`serializeError`), and so is the request of every model call a journal records.
 *
 * What it catches:
 * - values this process knows to be secret ({@link rememberSecret}): every value `ctx.secret`
 *   resolved, and the environment's credentials (variables named like `OPENAI_API_KEY`,
 *   `ANTHROPIC_API_KEY`, `*_TOKEN`, `*_SECRET`, `*_PASSWORD`, `AWS_SECRET_ACCESS_KEY` …), wherever
 *   they appear, whatever their shape (also JSON-escaped);
 * - credentials by their shape: provider keys (`sk-…`, `sk-ant-…`, `sk_live_…`, Google's `AIza…`,
 *   GitHub's `ghp_…`/`github_pat_…`, Slack's `xox?-…`, Hugging Face's `hf_…`, Groq's `gsk_…`,
 *   xAI's `xai-…`), AWS access key ids (`AKIA…`, `ASIA…`), JSON Web Tokens, PEM private keys;
 * - credentials by their label: `Authorization:`/`Proxy-Authorization:` headers (any scheme),
 *   `Bearer …`, and the value after a name such as `api_key`, `api-key`, `x-api-key`, `apikey`,
 *   `access_token`, `refresh_token`, `client_secret`, `password`, `aws_secret_access_key` (as a
 *   header, a query parameter, `name=value` or a JSON field); `key=`, `token=`, `sig=` query
 *   parameters; the password in a URL (`postgres://user:password@host`).
 *
 * What it cannot catch: a secret of no known shape, under no telling label, that this process was
 * never told about (a password typed into a prompt, a key read from a file by a tool without
 * `ctx.secret`); a secret split, encoded (base64, URL-encoded) or transformed before it was
 * thrown; a known value shorter than {@link MIN_SECRET_LENGTH} characters, or an environment
 * variable's shorter than {@link MIN_ENVIRONMENT_SECRET_LENGTH} (they would match ordinary text);
 * more than {@link MAX_KNOWN_SECRETS} distinct values at once (the oldest are dropped). Tool arguments and results are stored as given, but for the values this process knows
 * (a tool result is cleaned of them); the journal is no place for credentials: a tool resolves
 * them with `ctx.secret(name)` when it runs.
 */

/** What takes a credential's place in stored text. */
export const REDACTED = "[REDACTED]";

/** Known values shorter than this are not redacted: they would match ordinary text. */
export const MIN_SECRET_LENGTH = 8;

/**
 * An environment variable's value is taken for a known secret only from this length on: real keys
 * and tokens are longer, and a short one (`POSTGRES_PASSWORD=postgres`) would blank ordinary words.
 */
export const MIN_ENVIRONMENT_SECRET_LENGTH = 16;

/** How many known values are kept: the most recently remembered (a secret resolved again is kept). */
export const MAX_KNOWN_SECRETS = 1000;

/** Values known to be secret, in this process, oldest first (see {@link rememberSecret}). */
const known = new Set<string>();
/** One alternation of every known value (and its JSON-escaped form), longest first; rebuilt on change. */
let knownPattern: RegExp | undefined;

/**
 * Adds a value to those redacted wherever they appear, in this process: every runtime in it keeps
 * every value any of them knows out of what it stores (over-redacting another runtime's text is
 * harmless; storing a credential is not). Values shorter than {@link MIN_SECRET_LENGTH} are ignored.
 */
export function rememberSecret(value: string): void {
  if (typeof value !== "string" || value.length < MIN_SECRET_LENGTH) return;
  if (known.has(value)) {
    // Kept as the newest, so a secret still in use is never the one dropped.
    known.delete(value);
    known.add(value);
    return;
  }
  known.add(value);
  if (known.size > MAX_KNOWN_SECRETS) known.delete(known.values().next().value as string);
  const forms = new Set<string>();
  for (const v of known) {
    forms.add(v);
    forms.add(JSON.stringify(v).slice(1, -1));
  }
  const alternatives = [...forms].sort((a, b) => b.length - a.length).map(escapeRegExp);
  knownPattern = new RegExp(alternatives.join("|"), "g");
}

/**
 * Environment variables whose value is a credential, by name: `OPENAI_API_KEY`,
 * `ANTHROPIC_API_KEY`, `STRIPE_KEY`, `GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `DB_PASSWORD`, `CAIRN_TOKENS` …
 */
export const SECRET_VARIABLE =
  /(?:^|_)(?:API_?KEY|KEY_?SECRET|SECRET(?:_?KEY)?|SECRET_ACCESS_KEY|ACCESS_?KEY(?:_ID)?|KEY|SESSION_TOKEN|TOKENS?|PASSWORD|PASSWD|PRIVATE_KEY|CREDENTIALS?|AUTH)$/i;

/**
 * Remembers ({@link rememberSecret}) the value of every variable of `env` named like a credential,
 * at least {@link MIN_ENVIRONMENT_SECRET_LENGTH} characters long.
 */
export function rememberEnvironmentSecrets(env: Readonly<Record<string, string | undefined>>): void {
  for (const [name, value] of Object.entries(env)) {
    if (value && value.length >= MIN_ENVIRONMENT_SECRET_LENGTH && SECRET_VARIABLE.test(name) && !known.has(value)) {
      rememberSecret(value);
    }
  }
}

/** Credentials by shape or label, and what replaces each match. */
const PATTERNS: readonly [RegExp, string | ((match: string, ...groups: string[]) => string)][] = [
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g, REDACTED],
  // A header (or a field) that carries a credential, whatever its scheme: `Authorization: Basic …`.
  [
    /\b((?:proxy-)?authorization["']?\s*[:=]\s*["']?)(?:(bearer|basic|token|digest|apikey)\s+)?[^\s"',;&]+/gi,
    (_match, label: string, scheme: string | undefined) => `${label}${scheme ? `${scheme} ` : ""}${REDACTED}`,
  ],
  // A bearer token has a digit or a sign in it, or is long: "Bearer authentication" is prose.
  [/\b(bearer\s+)(?:(?=[A-Za-z]*[0-9\-._~+/])[A-Za-z0-9\-._~+/]{8,}|[A-Za-z]{24,})=*/gi, `$1${REDACTED}`],
  // The value after a telling name: `api_key=…`, `"x-api-key": "…"`, `password: …`.
  [
    /\b((?:x-)?(?:api[-_]?key|apikey|access[-_]?token|refresh[-_]?token|id[-_]?token|auth[-_]?token|client[-_]?secret|secret[-_]?key|private[-_]?key|password|passwd|aws[-_]?secret[-_]?access[-_]?key|aws[-_]?session[-_]?token|x-goog-api-key)["']?\s*[:=]\s*["']?)[^\s"',;&]+/gi,
    `$1${REDACTED}`,
  ],
  [/([?&](?:key|token|sig|signature|access_token|api_key|apikey)=)[^&#\s"']+/gi, `$1${REDACTED}`],
  // The password of a URL: scheme://user:password@host.
  [/\b([a-z][a-z0-9+.-]*:\/\/[^:/?#\s@]+:)[^@/?#\s]+@/gi, `$1${REDACTED}@`],
  [
    /\b(?:sk-[A-Za-z0-9_-]{16,}|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|AIza[0-9A-Za-z_-]{30,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}|hf_[A-Za-z0-9]{30,}|gsk_[A-Za-z0-9]{20,}|xai-[A-Za-z0-9]{20,})/g,
    REDACTED,
  ],
  [/\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g, REDACTED],
  [/\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, REDACTED],
];

/** `text` with every credential it finds replaced by {@link REDACTED} (see the file's comment). */
export function redactText(text: string): string {
  let out = redactKnownText(text);
  for (const [pattern, replacement] of PATTERNS) {
    pattern.lastIndex = 0;
    if (!pattern.test(out)) continue;
    pattern.lastIndex = 0;
    out = out.replace(pattern, replacement as string);
  }
  return out;
}

/** `text` with the values this process knows to be secret replaced; the same string when none is in it. */
export function redactKnownText(text: string): string {
  if (!knownPattern) return text;
  knownPattern.lastIndex = 0;
  if (!knownPattern.test(text)) return text;
  knownPattern.lastIndex = 0;
  return text.replace(knownPattern, REDACTED);
}

/** Whether `text` holds a value this process knows to be secret. */
export function holdsKnownSecret(text: string): boolean {
  if (!knownPattern) return false;
  knownPattern.lastIndex = 0;
  return knownPattern.test(text);
}

/** Object keys whose string value is a credential whatever it looks like. */
const SECRET_KEY =
  /^(?:(?:proxy-)?authorization|(?:x-)?api[-_]?key|apikey|access[-_]?token|refresh[-_]?token|id[-_]?token|auth[-_]?token|client[-_]?secret|secret[-_]?key|private[-_]?key|password|passwd|x-goog-api-key|aws[-_]?secret[-_]?access[-_]?key|aws[-_]?session[-_]?token)$/i;

/**
 * `value` with credentials redacted in every string ({@link redactText}), and the whole string
 * value of a key named like a credential (`apiKey`, `Authorization`, `password` …) replaced. Returns
 * `value` itself when nothing changed.
 */
export function redactJson<T extends Json | undefined>(value: T): T {
  return walk(value, redactText, true) as T;
}

/** `value` with only the values this process knows to be secret replaced; `value` itself when none is in it. */
export function redactKnownJson<T extends Json | undefined>(value: T): T {
  return walk(value, redactKnownText, false) as T;
}

function walk(value: Json | undefined, text: (s: string) => string, byKey: boolean): Json | undefined {
  if (typeof value === "string") return text(value);
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    let out: Json[] | undefined;
    value.forEach((item, i) => {
      const next = walk(item, text, byKey) as Json;
      if (next !== item) {
        out ??= value.slice();
        out[i] = next;
      }
    });
    return out ?? value;
  }
  let out: { [key: string]: Json } | undefined;
  for (const [key, item] of Object.entries(value)) {
    const next =
      byKey && typeof item === "string" && item !== REDACTED && SECRET_KEY.test(key)
        ? REDACTED
        : (walk(item, text, byKey) as Json);
    if (next !== item) {
      out ??= { ...value };
      // defineProperty: a key "__proto__" (JSON.parse makes it an own key) stays a key.
      Object.defineProperty(out, key, { value: next, writable: true, enumerable: true, configurable: true });
    }
  }
  return out ?? value;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
