// GitHub's own signing (@octokit/webhooks-methods), for tests: the package is ESM only, which jest's
// CommonJS resolver cannot load, so it signs in a Node child process that imports it.
import { execFileSync } from 'node:child_process';

const SCRIPT = `import { sign } from '@octokit/webhooks-methods';
let raw = '';
process.stdin.setEncoding('utf8');
for await (const chunk of process.stdin) raw += chunk;
const { secret, payload } = JSON.parse(raw);
process.stdout.write(await sign(secret, payload));`;

/** The X-Hub-Signature-256 GitHub sends for `payload` (UTF-8 text) signed with `secret`. */
export function githubSignature(secret: string, payload: string): string {
  return execFileSync(process.execPath, ['--input-type=module', '-e', SCRIPT], { input: JSON.stringify({ secret, payload }), encoding: 'utf8' });
}
