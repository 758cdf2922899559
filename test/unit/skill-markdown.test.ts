// A SKILL.md read as the Agent Skills format writes it (domain/skill-markdown.ts): front matter
// bounded before it is parsed, YAML's JSON schema, the shape checked before anything walks it.
import { FRONT_MATTER_BYTES, parseSkillFile } from '../../src/domain/skill-markdown';

describe('parseSkillFile', () => {
  test('front matter members and the instructions after the closing line', () => {
    expect(parseSkillFile('---\r\nname: a\r\ndescription: "yes"\r\nallowed-tools: [Read]\r\n---\r\n# Body\r\n')).toEqual({
      ok: true,
      fields: { name: 'a', description: 'yes' },
      body: '# Body\r\n',
    });
    expect(parseSkillFile('---\n---\nonly body')).toMatchObject({
      ok: false,
      problem: { path: 'front matter', message: expect.stringMatching(/^must be a YAML mapping/) },
    });
  });

  test('plain scalars keep YAML 1.2 JSON meanings: no timestamps, and yes is a string', () => {
    const parsed = parseSkillFile('---\nname: a\ndescription: yes\nmetadata:\n  when: 2026-01-01\n---\n');
    expect(parsed).toMatchObject({ ok: true, fields: { description: 'yes', metadata: { when: '2026-01-01' } } });
  });

  test('an alias bomb is refused by its shape before anything walks it', () => {
    const bomb = `---\nname: a\ndescription: d\nmetadata:\n  a: &a [x, x, x, x, x, x, x, x]\n  b: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n  c: [*b, *b, *b, *b, *b, *b, *b, *b]\n---\n`;
    expect(parseSkillFile(bomb)).toEqual({ ok: false, problem: { path: 'front matter.metadata["a"]', message: 'must be a string' } });
  });

  test('escapes YAML allows but no request may carry: U+0000 and lone surrogates', () => {
    expect(parseSkillFile('---\nname: "a\\0b"\ndescription: d\n---\n')).toMatchObject({ ok: false, problem: { path: 'front matter.name' } });
    expect(parseSkillFile('---\nname: a\ndescription: "\\uD800"\n---\n')).toMatchObject({ ok: false, problem: { path: 'front matter.description' } });
    expect(parseSkillFile('---\nname: a\n---\nbody \u0000')).toMatchObject({ ok: false, problem: { path: 'body' } });
  });

  test('front matter over the bound is refused by its size', () => {
    const big = `---\nname: a\n# ${'x'.repeat(FRONT_MATTER_BYTES)}\n---\nbody`;
    expect(parseSkillFile(big)).toMatchObject({
      ok: false,
      problem: { path: 'front matter', message: expect.stringMatching(/^is \d+ bytes; at most 16384$/) },
    });
  });
});
