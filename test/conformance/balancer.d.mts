// Types for balancer.mjs, so TypeScript tests can import it.

/** The deploy file's HAProxy config, listening on 127.0.0.1:`port`, its servers `replicas` on 127.0.0.1. */
export declare function haproxyConfig(port: number, replicas: readonly { id: string; port: number }[], text?: string): string;
export declare function startBalancedTeam(options: { mcpServers: Record<string, unknown>; count?: number }): Promise<{
  base: string;
  replicas: { base: string; pid: number }[];
  haproxyPid: number;
  stop(): Promise<boolean>;
}>;
