// The import rules of src/ (docs/architecture.md), checked by `npm run lint:imports` (part of
// `npm test`). Layers depend downward only:
//   composition root (main, cli, service) → http, mcp → services → domain, store port, runtime
//   store adapters (store/sqlite, store/postgres) implement the port; only store/open.ts picks one.
// Type-only imports count: a cycle of types is still a cycle a reader must untangle.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'No import cycles, type-only imports included.', from: {}, to: { circular: true } },
    {
      name: 'domain-imports-only-domain',
      severity: 'error',
      comment: 'The domain is pure: it imports nothing but the domain (and Node built-ins).',
      from: { path: '^src/domain/' },
      to: { pathNot: ['^src/domain/', '^node:'], dependencyTypesNot: ['core', 'npm'] },
    },
    {
      name: 'store-knows-no-upper-layer',
      severity: 'error',
      comment: 'The store knows no HTTP, no services, no runtime, no auth, no MCP.',
      from: { path: '^src/store/' },
      to: { path: '^src/(http|mcp|services|runtime|auth)/' },
    },
    {
      name: 'port-and-shared-import-no-adapter',
      severity: 'error',
      comment: "The port and the shared logic are the adapters' common ground: they import neither.",
      from: { path: '^src/store/(port|shared)/' },
      to: { path: '^src/store/(sqlite|postgres)/' },
    },
    {
      name: 'port-imports-only-port-and-domain',
      severity: 'error',
      comment: 'The port is interfaces and types: it imports only itself and the domain.',
      from: { path: '^src/store/port/' },
      to: { pathNot: ['^src/store/port/', '^src/domain/'] },
    },
    {
      name: 'adapters-never-import-each-other',
      severity: 'error',
      from: { path: '^src/store/sqlite/' },
      to: { path: '^src/store/postgres/' },
    },
    {
      name: 'adapters-never-import-each-other-pg',
      severity: 'error',
      from: { path: '^src/store/postgres/' },
      to: { path: '^src/store/sqlite/' },
    },
    {
      name: 'adapters-only-inside-the-store',
      severity: 'error',
      comment: 'Outside the store, code sees the port; store/open.ts alone picks an adapter.',
      from: { pathNot: '^src/store/' },
      to: { path: '^src/store/(sqlite|postgres)/' },
    },
    {
      name: 'open-store-only-from-the-composition-root',
      severity: 'error',
      comment: 'Services, http and the runtime are given a store; only the composition root opens one.',
      from: { path: '^src/(http|mcp|services|runtime|auth|domain)/' },
      to: { path: '^src/store/open' },
    },
    {
      name: 'services-below-http',
      severity: 'error',
      comment: 'Services raise domain errors; http maps them. Services never import http or mcp.',
      from: { path: '^src/services/' },
      to: { path: '^src/(http|mcp)/' },
    },
    {
      name: 'http-knows-no-mcp',
      severity: 'error',
      comment: 'The MCP endpoint carries the operations http defines (http/calls.ts); http is given it by the composition root and never imports it.',
      from: { path: '^src/http/' },
      to: { path: '^src/mcp/' },
    },
    {
      name: 'runtime-below-services',
      severity: 'error',
      comment: 'The runtime knows no web layer and no services.',
      from: { path: '^src/runtime/' },
      to: { path: '^src/(http|mcp|services)/' },
    },
    {
      name: 'apps-below-the-runtime',
      severity: 'error',
      comment: 'Apps are what the runtime and the services call: they know no web layer, no services, and of the runtime only its limits.',
      from: { path: '^src/apps/' },
      to: { path: ['^src/(http|mcp|services)/', '^src/runtime/(?!limits\\.ts$)'] },
    },
    {
      name: 'only-the-registry-imports-an-app',
      severity: 'error',
      comment: 'The app registry (src/apps/registry.ts) is the one place that knows which apps exist; everything else asks it.',
      from: { pathNot: ['^src/apps/registry\\.ts$', '^src/apps/builtin/'] },
      to: { path: '^src/apps/builtin/' },
    },
    {
      name: 'auth-below-services',
      severity: 'error',
      comment: 'Token verification is used by http; it imports no services, http or store adapter.',
      from: { path: '^src/auth/' },
      to: { path: '^src/(http|mcp|services)/' },
    },
    {
      name: 'channels-below-services',
      severity: 'error',
      comment: "The channels' protocols (SMTP, mail, WhatsApp) know nothing of the service: services, the web layers and the runtime use them.",
      from: { path: '^src/channels/' },
      to: { path: '^src/(http|mcp|services|runtime|smtp|store|apps)/' },
    },
    {
      name: 'one-sqlite-driver',
      severity: 'error',
      comment: 'sqlite-driver.ts picks the better-sqlite3 major the running Node needs; nothing imports either major directly.',
      from: { pathNot: '^src/sqlite-driver\\.ts$' },
      to: { path: 'node_modules/(@types/)?better-sqlite3' },
    },
    {
      name: 'nothing-imports-the-composition-root',
      severity: 'error',
      from: { pathNot: '^src/(main|cli)\\.ts$' },
      to: { path: '^src/(main|cli|service)\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|generated)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
