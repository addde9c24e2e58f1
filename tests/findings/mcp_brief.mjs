// SPDX-License-Identifier: GPL-2.0
// The profile and findings replies of `llmprof mcp`, through the official
// MCP SDK client: the profile tool runs a program whose leaf `spin` has
// all the time, called from caller_a, caller_b and caller_c at 60/25/15 %.
// The reply must name the three callers with their shares (total share and
// heaviest path, each within 5 points) and stay within its stated budget;
// the findings reply on the written profile too.
// argv: SDK_DIR LLMPROF PROGRAM WORK_DIR
import path from "node:path";
import { pathToFileURL } from "node:url";

const [sdkDir, llmprof, program, work] = process.argv.slice(2);
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

// The budgets the tools' descriptions state.
const BRIEF_BUDGET = 6144;
const PROFILE_BUDGET = 7680;

const client = new Client({ name: "llmprof-test", version: "1.0.0" });
const transport = new StdioClientTransport({
  command: llmprof, args: ["mcp", "--allow-root-commands", "--root", work], stderr: "inherit",
});
await client.connect(transport);
const { tools } = await client.listTools();
const described = (name) => tools.find((t) => t.name === name).description;
check(described("profile").includes(`${PROFILE_BUDGET} bytes`), "profile states its budget");
check(described("findings").includes(`${BRIEF_BUDGET} bytes`), "findings states its budget");

// A share on a line of the form "  60.12%  TEXT", TEXT matching the pattern.
const share = (text, pattern) => {
  const m = text.match(new RegExp(`^\\s*([0-9.]+)%\\s+${pattern}$`, "m"));
  return m ? Number(m[1]) : NaN;
};
const callers = [["caller_a", 60], ["caller_b", 25], ["caller_c", 15]];

// The lines of a section, from its title to the next title.
const section = (text, title) => {
  const at = text.indexOf(title);
  if (at < 0)
    return "";
  const rest = text.slice(at + title.length);
  const end = rest.search(/^[A-Z(]/m);
  return end < 0 ? rest : rest.slice(0, end);
};

function checkCallers(text, what) {
  const totals = section(text, "Top functions by total share");
  const paths = section(text, "Heaviest call paths");
  const selfs = section(text, "Top functions by self share");
  for (const [fn, want] of callers) {
    const total = share(totals, fn);
    const path = share(paths, `.*\\b${fn} > spin`);
    check(Math.abs(total - want) <= 5, `${what}: ${fn} total share ${total}, want ${want}`);
    check(Math.abs(path - want) <= 5, `${what}: path through ${fn} ${path}, want ${want}`);
  }
  check(share(selfs, "spin") >= 90, `${what}: spin's self share ${share(selfs, "spin")}`);
}

const profiled = await client.callTool(
  { name: "profile", arguments: { command: [program, "4"], frequency: 2999 } },
  undefined, { timeout: 120000 });
check(!profiled.isError, `profile failed: ${profiled.content[0].text}`);
const text = profiled.content[0].text;
console.log(text);
checkCallers(text, "profile");
const pathLines = text.split("\n").filter((l) => /^(profile|command output): /.test(l));
const besidesPaths = Buffer.byteLength(text) - pathLines.reduce((n, l) => n + Buffer.byteLength(l) + 1, 0);
check(besidesPaths <= PROFILE_BUDGET, `profile reply is ${besidesPaths} bytes besides its paths`);
const written = text.match(/^profile: (.+)$/m);
check(written, "the reply names the written profile");

const findings = await client.callTool({ name: "findings", arguments: { path: written[1] } });
check(!findings.isError, `findings failed: ${findings.content[0].text}`);
const brief = findings.content[0].text;
console.log(brief);
checkCallers(brief, "findings");
check(Buffer.byteLength(brief) <= BRIEF_BUDGET, `findings reply is ${Buffer.byteLength(brief)} bytes`);
check(/^Findings/m.test(brief), "the findings reply has its findings section");
await client.close();
console.log("PASS");
