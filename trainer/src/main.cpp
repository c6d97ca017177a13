#include "grpo/trainer/trainer.h"

int main(int argc, char** argv) {
  return grpo::trainer::run_trainer_cli(argc, argv);
}
