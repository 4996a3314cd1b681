import { MissingPeerDependencyError } from "./errors.ts";

/**
 * Loads an optional peer dependency with the `require` it is given (the caller's
 * `createRequire(import.meta.url)`, so the package resolves from Cairn's own place in
 * `node_modules`), and turns "not installed" into a {@link MissingPeerDependencyError} that names
 * the package and the command that installs it. Any other failure (the package is there but
 * broken) is rethrown as it came.
 *
 * @param feature what needs the package, for the message, e.g. "cairn/postgres"
 * @param specifier what to load when it is not the package's main entry, e.g.
 *   "@modelcontextprotocol/sdk/client/index.js"
 */
export function requirePeer<T>(
  load: (id: string) => unknown,
  packageName: string,
  feature: string,
  specifier = packageName,
): T {
  try {
    return load(specifier) as T;
  } catch (error) {
    if (!isNotFound(error, packageName)) throw error;
    throw new MissingPeerDependencyError(
      `${feature} needs the package "${packageName}", which is not installed: run \`npm install ${packageName}\` in your app (it is an optional peer dependency of cairn)`,
      { packageName, feature },
      { cause: error },
    );
  }
}

/** Whether `error` says that `packageName` itself (not one of its own imports) was not found. */
function isNotFound(error: unknown, packageName: string): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== "MODULE_NOT_FOUND" && code !== "ERR_MODULE_NOT_FOUND") return false;
  const message = String((error as Error).message);
  return message.includes(`'${packageName}'`) || message.includes(`'${packageName}/`);
}
