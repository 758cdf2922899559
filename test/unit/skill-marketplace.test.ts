// The marketplace's loader (src/apps/skills/marketplace.ts) on real directories: the repository's
// own skills load; a folder that breaks a rule stops the load naming the file and the rule.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadMarketplace, MarketplaceError } from '../../src/apps/skills/marketplace';
import { projectRoot } from '../../src/paths';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skills-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const skillMd = (name: string, extra = '') => `---\nname: ${name}\ndescription: Does ${name}.\n${extra}---\n# ${name}\n\nSteps.\n`;

function write(relative: string, content: string | Buffer): void {
  const file = path.join(dir, relative);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content);
}

test("the repository's skills load, each valid, with their files", () => {
  const { skills } = loadMarketplace(path.join(projectRoot, 'skills'), false);
  expect([...skills.keys()]).toEqual(['careful-writes', 'http-requests', 'kv-records', 'workflow-delegation']);
  for (const skill of skills.values()) {
    expect(skill.name).toBe(skill.slug);
    expect(skill.version).toBe('1.0');
    expect(skill.body.length).toBeGreaterThan(200);
  }
  expect(skills.get('http-requests')!.files.map((f) => f.path)).toEqual(['references/pagination.md']);
});

test('a skill with files in folders loads them by relative path; a version defaults to "1"', () => {
  write('alpha/SKILL.md', skillMd('alpha'));
  write('alpha/references/a.md', 'A');
  write('alpha/templates/deep/b.txt', 'B');
  const alpha = loadMarketplace(dir, false).skills.get('alpha')!;
  expect(alpha).toMatchObject({ slug: 'alpha', name: 'alpha', description: 'Does alpha.', version: '1', body: '# alpha\n\nSteps.\n' });
  expect(alpha.files).toEqual([
    { path: 'references/a.md', content: 'A' },
    { path: 'templates/deep/b.txt', content: 'B' },
  ]);
});

test('a missing directory is empty only when optional', () => {
  expect(loadMarketplace(path.join(dir, 'none'), true).skills.size).toBe(0);
  expect(() => loadMarketplace(path.join(dir, 'none'), false)).toThrow(MarketplaceError);
});

test.each([
  ['no SKILL.md', () => write('beta/notes.md', 'x'), /beta: no SKILL\.md/],
  ['a name other than its folder', () => write('beta/SKILL.md', skillMd('gamma')), /name 'gamma' differs from its folder's name 'beta'/],
  ['a bad name', () => write('Beta/SKILL.md', skillMd('Beta')), /name: 'Beta' must be 1 to 64 lowercase letters/],
  ['no front matter', () => write('beta/SKILL.md', '# beta\n'), /starts with front matter/],
  [
    'a binary file',
    () => {
      write('beta/SKILL.md', skillMd('beta'));
      write('beta/logo.png', Buffer.from([0x89, 0x50, 0xff, 0xfe]));
    },
    /logo\.png: not UTF-8 text/,
  ],
  [
    'a file over 64 KiB',
    () => {
      write('beta/SKILL.md', skillMd('beta'));
      write('beta/big.md', 'x'.repeat(65_537));
    },
    /big\.md: 65537 bytes/,
  ],
  [
    'more than 20 files',
    () => {
      write('beta/SKILL.md', skillMd('beta'));
      for (let i = 0; i < 21; i++) write(`beta/f${String(i).padStart(2, '0')}.md`, 'x');
    },
    /more than 20 files/,
  ],
])('%s stops the load, naming the file and the rule', (_name, arrange, message) => {
  arrange();
  expect(() => loadMarketplace(dir, false)).toThrow(message);
});

test('a symbolic link (which could reach outside the skill) stops the load', () => {
  write('beta/SKILL.md', skillMd('beta'));
  fs.symlinkSync('/etc/hostname', path.join(dir, 'beta', 'host.md'));
  expect(() => loadMarketplace(dir, false)).toThrow(/host\.md: a symbolic link/);
});
