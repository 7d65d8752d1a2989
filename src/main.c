/* autoscaled: placeholder entry point until the agent lands. */
#include <stdio.h>
int main(void)
{
	return 0;
}
