// Starts a throwaway PostgreSQL cluster for the whole run (scripts/pg-cluster.js, under a second)
// unless TEST_PG_URL names a server already, and tells the tests where it is; global-teardown.js
// stops it. The PostgreSQL store's own tests always use it; with TEST_STORE=postgres every service
// and server the integration and reliability tests start does. Without the server binaries only
// the tests that need PostgreSQL fail, saying so (.ci/run installs them).
const { startCluster } = require('../scripts/pg-cluster');

module.exports = async () => {
  if (process.env.TEST_PG_URL) return;
  let cluster;
  try {
    cluster = await startCluster();
  } catch (err) {
    if (process.env.TEST_STORE === 'postgres') throw err;
    process.stderr.write(`no PostgreSQL cluster for the tests: ${err.message}\n`);
    return;
  }
  process.env.TEST_PG_URL = cluster.url;
  process.env.TEST_PG_CLUSTER_DIR = cluster.dir;
};
