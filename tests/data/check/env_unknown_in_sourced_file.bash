# Sourced by env_unknown_in_sourced_file.sh: the cluster's network settings and the rollout
# overrides shared by its runs.
export NCCL_SOCKET_IFNAME=eth0
export NCCL_IB_HCA=mlx5
export NCCL_IB_TIMEOUTS=22
export NCCL_IB_GID_INDEX=3

ROLLOUT_ARGS="actor_rollout_ref.rollout.name=vllm
    actor_rollout_ref.rollout.tensor_model_parallel_size=4
    actor_rollout_ref.rollout.gpu_memory_utilisation=0.6
    actor_rollout_ref.rollout.n=5"
