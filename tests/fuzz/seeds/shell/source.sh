DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$DIR/common.bash"
. ./common.bash arg1 arg2
source /etc/profile
source "$(dirname "$0")/../outside.sh"
python3 -m verl.trainer.main_ppo model=$MODEL_PATH $COMMON
