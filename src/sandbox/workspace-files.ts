import { constants } from "node:fs";
import { chown, lstat, mkdir, open, readFile, realpath } from "node:fs/promises";
import { dirname, join, posix, relative, sep } from "node:path";
import { InvalidInputError } from "../core/errors.ts";
import { checkText } from "../core/text.ts";
import { isCode } from "./sandbox-directory.ts";

/** A host user and group that must own what is written into a workspace. */
export interface Owner {
  uid: number;
  gid: number;
}

function refuse(path: string, why: string, fix = "give a path inside the workspace, relative to it"): never {
  throw new InvalidInputError(`workspace path "${path}" ${why}: ${fix}`, [{ path: ["path"], message: why }]);
}

/**
 * The normalized relative form of a workspace path: absolute paths and `..` out of the workspace
 * are refused (`""` is the workspace itself).
 */
export function workspaceRelative(path: unknown): string {
  const given = checkText(path, "workspace path", { maxLength: 4096, allowEmpty: true });
  if (posix.isAbsolute(given)) refuse(given, "is absolute");
  const normal = posix.normalize(given === "" ? "." : given);
  if (normal === ".." || normal.startsWith("../")) refuse(given, "leads out of the workspace");
  return normal === "." ? "" : normal.replace(/\/$/, "");
}

function inside(root: string, real: string): boolean {
  const rel = relative(root, real);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !posix.isAbsolute(rel));
}

/**
 * The host path of a workspace path that must exist, with every symbolic link on the way resolved
 * and still inside the workspace. Throws {@link InvalidInputError} when it leads out or is missing.
 */
export async function resolveExisting(workspace: string, path: string): Promise<string> {
  const rel = workspaceRelative(path);
  const root = await realpath(workspace);
  let real: string;
  try {
    real = await realpath(join(root, rel));
  } catch (error) {
    if (isCode(error, "ENOENT") || isCode(error, "ENOTDIR")) refuse(path, "does not exist", "give an existing path");
    throw error;
  }
  if (!inside(root, real)) refuse(path, "leads out of the workspace through a symbolic link");
  return real;
}

/** Reads a file of the workspace. */
export async function readWorkspaceFile(workspace: string, path: string): Promise<Uint8Array> {
  const real = await resolveExisting(workspace, path);
  try {
    return new Uint8Array(await readFile(real));
  } catch (error) {
    if (isCode(error, "EISDIR")) refuse(path, "is a directory", "give a file's path");
    throw error;
  }
}

/**
 * Writes a file of the workspace, making its missing parent folders. The nearest existing parent
 * must resolve inside the workspace, and the file itself must not be a symbolic link (opened with
 * O_NOFOLLOW), so no write lands outside. A command running at the same time could still swap a
 * folder for a link between the check and the write: write between commands.
 */
export async function writeWorkspaceFile(
  workspace: string,
  path: string,
  data: string | Uint8Array,
  owner?: Owner,
): Promise<void> {
  const rel = workspaceRelative(path);
  if (rel === "") refuse(path, "is the workspace itself", "give a file's path");
  const root = await realpath(workspace);
  const target = join(root, rel);
  const missing = await missingParents(root, dirname(target), path);
  for (const dir of missing) {
    await mkdir(dir).catch((error) => {
      if (!isCode(error, "EEXIST")) throw error;
    });
    if (owner) await chown(dir, owner.uid, owner.gid);
  }
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW;
    handle = await open(target, flags, 0o644);
  } catch (error) {
    if (isCode(error, "ELOOP")) refuse(path, "is a symbolic link", "write to the file it points at");
    if (isCode(error, "EISDIR")) refuse(path, "is a directory", "give a file's path");
    throw error;
  }
  try {
    await handle.writeFile(data);
    if (owner) await handle.chown(owner.uid, owner.gid);
  } finally {
    await handle.close();
  }
}

/** The folders between the nearest existing parent of `dir` and `dir`, checking that parent. */
async function missingParents(root: string, dir: string, path: string): Promise<string[]> {
  const missing: string[] = [];
  let at = dir;
  for (;;) {
    const stat = await lstat(at).catch((error) => {
      if (isCode(error, "ENOENT")) return undefined;
      throw error;
    });
    if (stat === undefined) {
      missing.push(at);
      at = dirname(at);
      continue;
    }
    const real = await realpath(at).catch(() => refuse(path, "leads through a broken symbolic link"));
    if (!inside(root, real)) refuse(path, "leads out of the workspace through a symbolic link");
    if (!stat.isDirectory() && !stat.isSymbolicLink()) refuse(path, "has a file where a folder is needed");
    return missing.reverse();
  }
}
