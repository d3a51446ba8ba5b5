import type { Command } from 'commander';
import { registerBackupCommands } from './commands/backups.js';
import { registerCompletionCommand } from './commands/completion.js';
import { registerDeploymentCommands } from './commands/deployments.js';
import { registerDomainCommands } from './commands/domains.js';
import { registerEnvCommands } from './commands/env.js';
import { registerLogCommands } from './commands/logs.js';
import { registerMemberCommands } from './commands/members.js';
import { registerOrgCommands } from './commands/orgs.js';
import { registerProjectCommands } from './commands/projects.js';
import { registerServiceCommands } from './commands/services.js';
import { registerTransferCommands } from './commands/transfer.js';

/**
 * The client commands of contract section 12 other than `deploy` (src/cli/deploy.ts), one group
 * per file under `commands/`: projects and open, deployments, rollback and cancel, domains, env,
 * orgs and switch, logs, backups, members and invitations, services, transfer, completion. Each prints JSON with `--json`, and ends through
 * output.ts's exit codes (0 done, 1 refused or failed, 2 usage).
 */
export function registerClientCommands(program: Command): void {
  registerProjectCommands(program);
  registerDeploymentCommands(program);
  registerDomainCommands(program);
  registerEnvCommands(program);
  registerOrgCommands(program);
  registerLogCommands(program);
  registerBackupCommands(program);
  registerMemberCommands(program);
  registerServiceCommands(program);
  registerTransferCommands(program);
  registerCompletionCommand(program);
}
