package io.strata.sdk.node;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * A job's plan as a node takes it: its wire form (the node expands it into the chunks of every
 * step) and the step it starts from. The loader's {@code PlanProgram} is one; the node client
 * needs no more of it, so this package does not depend on the loader's.
 */
public interface NodePlan {
  /** The global step the plan starts from. */
  long startStep();

  /** The same plan from global step {@code step} on. */
  NodePlan from(long step);

  /** The plan's wire form, the {@code program} of {@code POST /v1/plans}. */
  JsonNode toJson();
}
