// SPDX-License-Identifier: GPL-2.0
// Drives `llmprof mcp` with the official MCP SDK client: initialise, list
// the tools, profile a ground-truth process (its 50/30/20 shares must be in
// the reply), diff two profiles, and check that an unknown tool and
// malformed requests are JSON-RPC errors, and a pid that does not exist or a
// bad argument a tool result with isError, after which the server keeps
// serving.  The server runs as root for root (--allow-root-commands);
// tests/mcp/ checks it acting for another user.
// argv: SDK_DIR LLMPROF GROUND_TRUTH_PID BASE_PROFILE NEW_PROFILE
import { spawn } from "node:child_process";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [sdkDir, llmprof, pid, base, changed] = process.argv.slice(2);
const sdk = (p) =>
  pathToFileURL(path.join(sdkDir, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href;
const { Client } = await import(sdk("client/index.js"));
const { StdioClientTransport } = await import(sdk("client/stdio.js"));
const { LATEST_PROTOCOL_VERSION } = await import(sdk("types.js"));

function check(cond, what) {
  if (!cond) {
    console.error(`FAIL: ${what}`);
    process.exit(1);
  }
}

async function expectError(promise, code, pattern, what) {
  try {
    await promise;
  } catch (e) {
    check(e.code === code, `${what}: code ${e.code}, want ${code} (${e.message})`);
    check(pattern.test(e.message), `${what}: message '${e.message}'`);
    return;
  }
  check(false, `${what}: no error`);
}

const client = new Client({ name: "llmprof-test", version: "1.0.0" });
const serverArgs = ["mcp", "--allow-root-commands", "--root", "/"];
const transport = new StdioClientTransport({ command: llmprof, args: serverArgs, stderr: "inherit" });
await client.connect(transport);
check(client.getServerVersion().name === "llmprof", "server name");
// The SDK rejects a version it does not speak, so connecting proves it.
console.log(`negotiated with SDK latest ${LATEST_PROTOCOL_VERSION}`);

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
check(JSON.stringify(names) === JSON.stringify(["diff", "findings", "profile", "report"]),
  `tools: ${names}`);
for (const t of tools)
  check(t.inputSchema && t.inputSchema.type === "object", `schema of ${t.name}`);

// profile: the top functions with their percent shares, one per line.
const profiled = await client.callTool(
  { name: "profile", arguments: { pid: Number(pid), duration: 3, frequency: 499 } },
  undefined, { timeout: 60000 });
const text = profiled.content[0].text;
console.log(text);
const share = (fn) => {
  const m = text.match(new RegExp(`^\\s*([0-9.]+)%\\s+${fn}$`, "m"));
  return m ? Number(m[1]) : NaN;
};
for (const [fn, want] of [["burn_a", 50], ["burn_b", 30], ["burn_c", 20]])
  check(Math.abs(share(fn) - want) <= 4, `${fn} share ${share(fn)}, want ${want}`);
const written = text.match(/^profile: (.+)$/m);
check(written, "the reply names the written profile");

// report and findings on what profile wrote.
const report = await client.callTool({ name: "report", arguments: { path: written[1], top: 3 } });
check(/burn_a/.test(report.content[0].text), "report names burn_a");
const findings = await client.callTool({ name: "findings", arguments: { path: written[1], verbose: true } });
check(/Rules:/.test(findings.content[0].text), "findings lists the rules");

// diff: the regression of the new profile is found.
const diffed = await client.callTool({ name: "diff", arguments: { base, new: changed, threshold: 2 } });
check(diffed.structuredContent && diffed.structuredContent.regression === true, "diff regression flag");
check(/REGRESSION/.test(diffed.content[0].text) && /slow_escape/.test(diffed.content[0].text),
  "diff names the regression");
const same = await client.callTool({ name: "diff", arguments: { base, new: base } });
check(same.structuredContent.regression === false, "a profile against itself");

// An unknown tool is a JSON-RPC error; a tool that fails is a result with
// isError and one line saying why.  The server goes on serving.
await expectError(client.callTool({ name: "no_such_tool", arguments: {} }), -32602, /unknown tool/,
  "unknown tool");
async function expectToolError(args, pattern, what) {
  const r = await client.callTool(args);
  check(r.isError === true, `${what}: isError ${r.isError}`);
  check(pattern.test(r.content[0].text), `${what}: '${r.content[0].text}'`);
}
await expectToolError({ name: "profile", arguments: { pid: 2147483000, duration: 1 } },
  /no process with PID 2147483000/, "missing pid");
await expectToolError({ name: "profile", arguments: { pid: 1, command: ["true"] } },
  /either 'pid' or 'command'/, "pid and command");
await expectToolError({ name: "report", arguments: { path: "/nonexistent/x.folded" } },
  /nonexistent.*No such file/, "missing file");
await expectToolError({ name: "report", arguments: { path: written[1], bogus: 1 } },
  /unknown argument 'bogus'/, "unknown argument");
await expectToolError({ name: "report", arguments: { path: "/etc/passwd" } },
  /passwd/, "not a profile");
await client.ping();
await client.close();

// Malformed messages, sent raw: each gets its error, then a ping works.
const raw = spawn(llmprof, serverArgs, { stdio: ["pipe", "pipe", "inherit"] });
let out = "";
raw.stdout.on("data", (d) => (out += d));
raw.stdin.write("this is not json\n");
raw.stdin.write('[{"jsonrpc":"2.0","id":1,"method":"ping"}]\n');
raw.stdin.write('{"jsonrpc":"2.0","id":2,"method":"no/such/method"}\n');
raw.stdin.write('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"profile","arguments":"x"}}\n');
raw.stdin.write('{"jsonrpc":"2.0","id":4,"method":"ping"}\n');
raw.stdin.end();
await new Promise((resolve) => raw.on("close", resolve));
const replies = out.trim().split("\n").map((l) => JSON.parse(l));
check(replies.length === 5, `${replies.length} replies to 5 messages: ${out}`);
check(replies[0].error.code === -32700, "parse error");
check(replies[1].error.code === -32600, "batch refused");
check(replies[2].error.code === -32601, "unknown method");
check(replies[3].error.code === -32602, "arguments not an object");
check(replies[4].id === 4 && replies[4].result, "ping after errors");
console.log("PASS");
