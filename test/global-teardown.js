const { stopCluster } = require('../scripts/pg-cluster');

module.exports = async () => {
  if (process.env.TEST_PG_CLUSTER_DIR) stopCluster(process.env.TEST_PG_CLUSTER_DIR);
};
