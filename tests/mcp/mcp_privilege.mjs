// SPDX-License-Identifier: GPL-2.0
// The official MCP SDK client against `llmprof mcp` running as root for an
// unprivileged user: every refusal is a tool result with isError and the
// rule named, and the same calls work on the user's own processes and files.
// argv: SDK_DIR LLMPROF PROJECT USER UID GID USER_PID ROOT_PID
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [sdkDir, llmprof, project, user, uid, gid, userPid, rootPid] = process.argv.slice(2);
const sdk = (p) =>
  pathToFileURL(path.join(sdkDir, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href;
const { Client } = await import(sdk("client/index.js"));
const { StdioClientTransport } = await import(sdk("client/stdio.js"));

function check(cond, what) {
  if (!cond) {
    console.error(`FAIL: ${what}`);
    process.exit(1);
  }
}

async function connect(args, env) {
  const client = new Client({ name: "llmprof-privilege-test", version: "1.0.0" });
  await client.connect(new StdioClientTransport({
    command: llmprof, args, cwd: project, stderr: "inherit", env: { ...process.env, ...env },
  }));
  return client;
}

const timeout = { timeout: 60000 };
async function call(client, name, args) {
  const r = await client.callTool({ name, arguments: args }, undefined, timeout);
  return { error: r.isError === true, text: r.content[0].text, result: r };
}
async function refused(client, name, args, pattern, what) {
  const r = await call(client, name, args);
  check(r.error, `${what}: not refused: ${r.text}`);
  check(!r.text.includes("\n"), `${what}: more than one line: ${r.text}`);
  check(pattern.test(r.text), `${what}: '${r.text}'`);
  console.log(`refused (${what}): ${r.text}`);
}
async function works(client, name, args, what) {
  const r = await call(client, name, args);
  check(!r.error, `${what}: ${r.text}`);
  return r;
}
const owner = (file) => fs.statSync(file).uid;

// As sudo starts it: SUDO_UID and SUDO_GID name the user.
const client = await connect(["mcp"], { SUDO_UID: uid, SUDO_GID: gid, SUDO_USER: user });

// The command runs as the user: its uid, its groups, its HOME; /etc/shadow
// stays closed to it.
const ran = await works(client, "profile", {
  command: ["sh", "-c", "id -u; id -g; echo HOME=$HOME; head -c 20 /etc/shadow; true"],
  duration: 2, gpu: false, output: "command.folded",
}, "command");
const out = fs.readFileSync(path.join(project, "command.folded.command.out"), "utf8");
console.log(`the command said: ${JSON.stringify(out)}`);
const lines = out.split("\n");
check(lines[0] === uid, `the command ran as uid ${lines[0]}, want ${uid}`);
check(lines[1] === gid, `the command ran as gid ${lines[1]}, want ${gid}`);
check(/^HOME=\/nonexistent$/m.test(out), "the command's HOME is the user's");
// The command's standard error is in the reply, with llmprof's.
check(/shadow.*Permission denied/.test(ran.text), `the reply says shadow was refused: ${ran.text}`);
check(!/root:/.test(out), "the command read /etc/shadow");
check(owner(path.join(project, "command.folded")) === Number(uid), "the profile is the user's");

// Processes: another user's is refused, the user's own is profiled.
await refused(client, "profile", { pid: Number(rootPid), duration: 1 },
  new RegExp(`^refused by --any-process: PID ${rootPid} is not a process of ${user} \\(uid ${uid}\\) but of uid 0`),
  "another user's process");
await refused(client, "profile", { pid: 1, duration: 1 }, /^refused by --any-process: PID 1 /,
  "init");
const own = await works(client, "profile", {
  pid: Number(userPid), duration: 2, frequency: 199, gpu: false, output: "own.folded",
}, "the user's own process");
check(/burn_a/.test(own.text), `the own profile names burn_a: ${own.text}`);
check(owner(path.join(project, "own.folded")) === Number(uid), "own.folded is the user's");

// Reading: outside the allowed directory, out through a link or '..', a
// file the user may not read.
await refused(client, "report", { path: "/etc/shadow" },
  /^refused by --root: '\/etc\/shadow' is not under an allowed directory/, "outside --root");
await refused(client, "report", { path: "shadow.folded" },
  /^refused by --root: 'shadow.folded' leads outside the allowed directories/, "symlink escape");
await refused(client, "findings", { path: `${project}/../outside.folded` },
  /^refused by --root: .* leads outside the allowed directories/, "'..' escape");
await refused(client, "diff", { base: "base.folded", new: "rootonly.folded" },
  new RegExp(`^refused by the user's rights: ${user} \\(uid ${uid}\\) may not read 'rootonly.folded'`),
  "a file the user may not read");
await refused(client, "report", { path: "/proc/self/root/etc/shadow" },
  /^refused by --root/, "a /proc link");

// Writing: not over a file that is not a profile, not through a link, not
// outside the allowed directory.
await refused(client, "profile", { command: ["true"], duration: 1, gpu: false, output: "notes.txt" },
  /^refused: 'notes.txt' exists and is not a profile; it is not overwritten$/, "overwrite");
await refused(client, "profile", { command: ["true"], duration: 1, gpu: false, output: "link.folded" },
  /^refused: 'link.folded' is a symbolic link/, "output through a link");
await refused(client, "profile", { command: ["true"], duration: 1, gpu: false, output: "/tmp/x.folded" },
  /^refused by --root: '\/tmp\/x.folded' is not under an allowed directory/, "output outside --root");

// The same tools on the user's own files work; a profile may be replaced.
const report = await works(client, "report", { path: "own.folded", top: 3 }, "report");
check(/burn_a/.test(report.text), "report names burn_a");
check(!/\/dev\/fd/.test(report.text), `report names the path, not the descriptor: ${report.text}`);
await works(client, "findings", { path: "own.folded" }, "findings");
const diffed = await works(client, "diff", { base: "base.folded", new: "new.folded", threshold: 2 }, "diff");
check(diffed.result.structuredContent.regression === true, "diff finds the regression");
await works(client, "profile", { command: ["true"], duration: 1, gpu: false, output: "own.folded" },
  "replacing a profile");
// With no output named: a new directory of the user's, allowed from then on.
const fresh = await works(client, "profile", { command: ["true"], duration: 1, gpu: false }, "default output");
const written = fresh.text.match(/^profile: (.+)$/m);
check(written && owner(written[1]) === Number(uid), `the default output is the user's: ${fresh.text}`);
await works(client, "report", { path: written[1] }, "report on the default output");
await client.close();

// --user and --allow-pid: the named process may be profiled, others not.
const allowed = await connect(["mcp", "--user", user, "--allow-pid", rootPid], {});
await works(allowed, "profile", { pid: Number(rootPid), duration: 1, gpu: false, output: "allowed.folded" },
  "--allow-pid");
await refused(allowed, "profile", { pid: 1, duration: 1 }, /^refused by --any-process/, "--allow-pid only");
await allowed.close();
console.log("PASS");
