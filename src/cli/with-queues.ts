import type { Config } from '../config/schema';
import { createPipeline, pipelineOptions, type Pipeline } from '../pipeline/pipeline';
import { createRedisConnector } from '../redis/connect';

/** Opens the pipeline for one operator command and always closes it and the connection after. */
export async function withQueues<T>(config: Config, run: (pipeline: Pipeline) => Promise<T>): Promise<T> {
  const redis = createRedisConnector(config).open('operator');
  const pipeline = createPipeline(redis, pipelineOptions(config));
  try {
    return await run(pipeline);
  } finally {
    await pipeline.close();
    redis.disconnect();
  }
}
