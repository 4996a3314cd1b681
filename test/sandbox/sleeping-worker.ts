/**
 * A worker that starts a long command in a bubblewrap sandbox and waits: the test SIGKILLs it and
 * checks that the command died with it (bwrap's --die-with-parent). Args: <dir> <label> <marker>.
 */
import { BubblewrapProvider } from "../../src/sandbox.ts";

const [dir, label, marker] = process.argv.slice(2) as [string, string, string];
const sandbox = await new BubblewrapProvider({ dir }).create(label, {});
console.log("started");
await sandbox.exec(`setsid sleep ${marker} & sleep ${marker} & wait`);
