import { InvalidInputError, UnknownNameError } from "../core/errors.ts";
import { rememberEnvironmentSecrets, rememberSecret } from "../core/redact.ts";

/**
 * Where `ctx.secret(name)` looks a secret up, at the moment a tool asks for it: the environment by
 * default, or a vault, a secrets manager, a file of your own. Undefined (or an empty string) means
 * there is no such secret.
 * @example
 * new Runtime({ agents, secrets: async (name) => (await vault.read(`cairn/${name}`))?.value })
 */
export type SecretProvider = (name: string) => string | undefined | Promise<string | undefined>;

/** The default provider: `process.env`, read at each call (a rotated variable is seen at once). */
export const environmentSecrets: SecretProvider = (name) => process.env[name];

/**
 * What `ctx.secret` calls: the provider's value, remembered for redaction so that no error,
 * model request or tool result stores it. Also remembers the environment's credentials now
 * (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `*_TOKEN` …: `rememberEnvironmentSecrets`), which model
 * providers read on their own.
 */
export function secretResolver(provider: SecretProvider = environmentSecrets): (name: string) => Promise<string> {
  rememberEnvironmentSecrets(process.env);
  return async (name) => {
    if (typeof name !== "string" || name.length === 0 || name.length > 256) {
      throw new InvalidInputError(
        `ctx.secret needs the name of a secret, a non-empty string of at most 256 characters (got ${typeof name === "string" ? `${name.length} characters` : typeof name})`,
      );
    }
    const value = await provider(name);
    if (typeof value !== "string" || value.length === 0) {
      throw new UnknownNameError(
        "UNKNOWN_SECRET",
        `no secret "${name}": ${provider === environmentSecrets ? `set the environment variable ${name} for the worker` : "the runtime's secrets provider has none of that name"}, or pass new Runtime({ secrets }) to read it from elsewhere`,
      );
    }
    rememberSecret(value);
    return value;
  };
}
