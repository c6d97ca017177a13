lr=1e-6
ACTOR="
  actor_rollout_ref.actor.optim.lr=$lr \
  actor_rollout_ref.actor.ppo_mini_batch_size=${MINI:-$((256 / 4))}"
python3 -m verl.trainer.main_ppo $ACTOR "$ACTOR" ${EMPTY:-} "" trainer.nnodes=${N:-1} "$@"
